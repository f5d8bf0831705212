// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bundle.c - a session cut at one instant, as one notes-only ELF core (see
 * bundle.h).
 *
 * Layout written (a notes-only core as `coredump` keeps one, but streamed:
 * one buffer image in memory at a time, the headers written last):
 *
 *   [ELF header][one PT_NOTE program header][notes ...]
 *
 * Notes, owner RINGKEEPER, in this order: each buffer (RK_NOTE_BUFFER) and
 * sideband (RK_NOTE_SIDEBAND) cut at T, the tracing data, the symbol
 * tables, and last the session description (its "buffer N SOURCE/TID"
 * lines are known only then; readers take it wherever it is).
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include "bundle.h"
#include "elfcore.h"
#include "session.h"
#include "symtab.h"
#include "tracedata.h"
#include "util.h"

#define PAGE RK_PAGE_SIZE
#define NOTES_OFF (sizeof(Elf64_Ehdr) + sizeof(Elf64_Phdr))

void rk_bundle_opts_init(struct rk_bundle_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->for_uid = (uid_t)-1;
	o->for_gid = (gid_t)-1;
}

/* The cut of one buffer as rk_bufile__for_each_at() hands its records over. */
struct cut_ctx {
	__u8 *ring; /* data_size bytes: what is kept, from offset 0 */
	__u64 pos, from, t, sample_type;
	__u64 next; /* where the record after the last one taken starts */
	int after; /* a record timed after T was seen */
	struct rk_bundle_cut *cut;
};

/*
 * Records come whole and untorn (for_each re-checks the tail after each
 * copy). A file's records are in time order, so a record with no time (a
 * sideband record without sample_id) belongs before T while no timed record
 * after T came before it.
 */
static int cut_take(const struct perf_event_header *h, __u64 at, void *ctx)
{
	struct cut_ctx *c = ctx;
	__u64 when = rk_record_time(c->sample_type, h);

	/*
	 * The writer lapped us: the records between were overwritten unread.
	 * What we kept before them goes too (a hole would be read as a thread
	 * that did nothing meanwhile): the cut is the newest unbroken history.
	 */
	if (c->cut->kept && at != c->next) {
		c->cut->lapped += c->cut->kept;
		c->cut->kept = 0;
		c->pos = 0;
	}
	c->next = at + h->size;
	if (when ? when > c->t : c->after) {
		c->after |= !!when;
		c->cut->after++;
		return 0;
	}
	/* Before the window (a trigger's): left out, as a ring that had wrapped would have. */
	if (when && when < c->from) {
		c->cut->before++;
		return 0;
	}
	memcpy(c->ring + c->pos, h, h->size);
	c->pos += h->size;
	c->cut->kept++;
	return 0;
}

/* The AUX ring as it is, at the positions it has (its AUX records point there). */
static int copy_aux(const struct rk_bufile *bf, __u8 *img, __u64 aux_off)
{
	struct perf_event_mmap_page *pg = (struct perf_event_mmap_page *)img;
	__u64 mask = bf->aux_size - 1, pos = 0, first;
	__u8 *tmp = malloc(bf->aux_size);
	ssize_t n;

	if (!tmp)
		return -ENOMEM;
	n = rk_bufile__read_aux(bf, tmp, bf->aux_size, &pos);
	if (n < 0) {
		free(tmp);
		return (int)n;
	}
	first = bf->aux_size - (pos & mask);
	if (first > (__u64)n)
		first = (__u64)n;
	memcpy(img + aux_off + (pos & mask), tmp, first);
	memcpy(img + aux_off, tmp + first, (size_t)n - first);
	pg->aux_offset = aux_off;
	pg->aux_size = bf->aux_size;
	pg->aux_tail = pos;
	pg->aux_head = pos + (__u64)n;
	free(tmp);
	return 0;
}

int rk_bundle_cut(const struct rk_bufile *bf, __u64 t, void **image, size_t *size,
		  struct rk_bundle_cut *cut)
{
	return rk_bundle_cut_window(bf, 0, t, image, size, cut);
}

int rk_bundle_cut_window(const struct rk_bufile *bf, __u64 from, __u64 t, void **image,
			 size_t *size, struct rk_bundle_cut *cut)
{
	struct cut_ctx c = {
		.from = from, .t = t, .sample_type = bf->pmu->attr.sample_type, .cut = cut
	};
	struct perf_event_mmap_page *pg;
	struct rk_thread_ident *id;
	__u64 over0 = bf->ident->overwritten, ring = PAGE;
	struct rk_bufile check;
	const char *why;
	__u8 *img;
	int err;

	memset(cut, 0, sizeof(*cut));
	*image = NULL;
	c.ring = malloc(bf->data_size);
	if (!c.ring)
		return -ENOMEM;
	/* The readers' protocol: head (acquire), tail, each record re-checked after its copy. */
	err = rk_bufile__for_each_at(bf, cut_take, &c);
	if (err == -EBADMSG)
		cut->corrupt = 1;
	else if (err)
		goto out;
	cut->overwritten = bf->ident->overwritten - over0 + cut->lapped;
	cut->bytes = c.pos;
	while (ring < c.pos)
		ring *= 2;
	*size = PAGE + ring + bf->aux_size;
	if (posix_memalign((void **)&img, PAGE, *size)) {
		err = -ENOMEM;
		goto out;
	}
	memset(img, 0, *size);
	memcpy(img, bf->base, PAGE);
	memcpy(img + PAGE, c.ring, c.pos);
	pg = (struct perf_event_mmap_page *)img;
	pg->data_offset = PAGE;
	pg->data_size = ring;
	pg->data_tail = 0;
	pg->data_head = c.pos;
	pg->aux_offset = pg->aux_size = pg->aux_head = pg->aux_tail = 0;
	/* The writer may be changing the identity as we copy: its counters, ours. */
	id = (struct rk_thread_ident *)(img + ((const __u8 *)bf->ident - (const __u8 *)bf->base));
	id->pinned = 0;
	err = bf->aux_size ? copy_aux(bf, img, PAGE + ring) : 0;
	/* What we write must be what a reader accepts. */
	if (!err && rk_bufile__from_mem(&check, img, *size, &why))
		err = -EBADMSG;
	if (err)
		free(img);
	else
		*image = img;
out:
	free(c.ring);
	return err;
}

/* The session's recorder, if it runs: has it written every record up to @t? */
static int settle(const char *session_dir, __u64 t, int ms)
{
	struct rk_session_stat st;
	__u64 seen, deadline = rk_now_mono_ns() + (__u64)ms * 1000000;
	int changes = 0;

	if (rk_session_stat_read(session_dir, &st) || !rk_session_alive(&st))
		return 1;
	seen = st.update_ns;
	/*
	 * A recorder says up to when it has handed every signal out
	 * (handed_ns). An older one published only after an intake (every 20
	 * ticks): the first update after T may follow an intake that began
	 * before T; the second follows one that began after it, which took
	 * every record timed before its start.
	 */
	while (st.handed_ns ? st.handed_ns < t : changes < 2) {
		struct timespec ts = { 0, 5 * 1000 * 1000 };

		if (rk_now_mono_ns() > deadline)
			return 0;
		nanosleep(&ts, NULL);
		if (rk_session_stat_read(session_dir, &st) || !rk_session_alive(&st))
			return 1;
		if (st.update_ns != seen) {
			seen = st.update_ns;
			changes++;
		}
	}
	return 1;
}

/* A bundle being written. */
struct writer {
	int fd;
	__u64 notes_bytes;
	char *text; /* the session note */
	size_t text_len, nbuf;
	char **maps; /* mapped files named by the sidebands kept */
	size_t nmaps;
	const struct rk_bundle_opts *o;
	struct rk_bundle_stats *st;
};

static int text_add(struct writer *w, const char *line)
{
	size_t n = strlen(line);
	char *t = realloc(w->text, w->text_len + n + 1);

	if (!t)
		return -ENOMEM;
	memcpy(t + w->text_len, line, n + 1);
	w->text = t;
	w->text_len += n;
	return 0;
}

static int note_add(struct writer *w, __u32 type, const void *data, size_t size)
{
	struct rk_core_note nt = { type, -1, data, size };
	int err = rk_elfcore_note_write(w->fd, &nt);

	if (!err)
		w->notes_bytes += rk_elfcore_note_size(&nt);
	return err;
}

/* Each file mapping's name (a path, or [vdso]) once: their tables go in. */
static int map_take(const struct perf_event_header *h, void *ctx)
{
	struct writer *w = ctx;
	const char *name = rk_mmap2_name(h);
	char **v;
	size_t i;

	if (!name || (name[0] != '/' && strcmp(name, "[vdso]")))
		return 0;
	for (i = 0; i < w->nmaps; i++)
		if (!strcmp(w->maps[i], name))
			return 0;
	v = realloc(w->maps, (w->nmaps + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	w->maps = v;
	w->maps[w->nmaps] = strdup(name);
	if (!w->maps[w->nmaps])
		return -ENOMEM;
	w->nmaps++;
	return 0;
}

/*
 * Open @name in the directory open at @dfd as @o->for_uid would (its fsuid
 * and fsgid: the file's ACL decides, as for that user's own open; the
 * directories above were opened by the caller, whose --root may be root's
 * only), or as the caller without one. Root's
 * supplementary groups are kept: they grant nothing on a buffer file
 * (mode 0600 plus user entries), and changing them would change every
 * thread of the caller.
 */
static int open_as(int dfd, const char *name, const struct rk_bundle_opts *o)
{
	int fd, err;

	if (o->for_uid == (uid_t)-1)
		return openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	setfsgid(o->for_gid);
	setfsuid(o->for_uid);
	/* setfsuid() returns only the previous id: a second call tells if the first took. */
	if ((uid_t)setfsuid(o->for_uid) != o->for_uid) {
		fd = -1;
		errno = EPERM;
	} else {
		fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	}
	err = errno;
	setfsuid(0);
	setfsgid(0);
	errno = err;
	return fd;
}

/* One buffer file, @name in @dfd (@src NULL: a sideband), cut at @t, as a note. */
static int add_file(struct writer *w, int dfd, const char *src, const char *name, __u64 t)
{
	struct rk_bundle_cut cut;
	struct rk_bufile *bf, img;
	char line[600];
	size_t size;
	void *image;
	int fd, err;

	fd = open_as(dfd, name, w->o);
	if (fd < 0) {
		w->st->skipped++;
		return 0;
	}
	bf = rk_bufile__open_fd(fd, NULL);
	close(fd);
	if (!bf || (w->o->pid && bf->ident->tgid != w->o->pid)) {
		w->st->skipped += !bf;
		rk_bufile__free(bf);
		return 0;
	}
	/* A sideband keeps its mappings from before the window: the window's samples need them. */
	err = rk_bundle_cut_window(bf, src ? w->o->from_ns : 0, t, &image, &size, &cut);
	rk_bufile__free(bf);
	if (err)
		return err;
	w->st->kept += cut.kept;
	w->st->after += cut.after;
	w->st->overwritten += cut.overwritten;
	err = note_add(w, src ? RK_NOTE_BUFFER : RK_NOTE_SIDEBAND, image, size);
	if (!err && src) {
		snprintf(line, sizeof(line), "buffer %zu %s/%s\n", w->nbuf++, src, name);
		err = text_add(w, line);
		w->st->buffers++;
	} else if (!err) {
		/* The mapped files the kept records name: their symbols go in too. */
		if (!rk_bufile__from_mem(&img, image, size, NULL))
			err = rk_bufile__for_each(&img, map_take, w);
		w->st->sidebands++;
	}
	free(image);
	return err;
}

/* A file name of a session: TID, or TID.N (an earlier thread of that tid). */
static int buffer_name(const char *n)
{
	size_t d = strspn(n, "0123456789");

	return d &&
	       (!n[d] || (n[d] == '.' && n[d + 1] && !n[d + 1 + strspn(n + d + 1, "0123456789")]));
}

/* Every buffer of one source directory (SOURCE/ or sideband/). */
static int add_dir(struct writer *w, const char *session_dir, const char *src, __u64 t)
{
	char dir[PATH_MAX];
	int side = !strcmp(src, RK_SIDEBAND_DIR), err = 0;
	struct dirent *de;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/%s", session_dir, src);
	d = opendir(dir);
	if (!d)
		return 0;
	while (!err && (de = readdir(d))) {
		if (!buffer_name(de->d_name))
			continue;
		err = add_file(w, dirfd(d), side ? NULL : src, de->d_name, t);
	}
	closedir(d);
	return err;
}

/* The session's sources: its directories (never through a symlink). */
static int add_session(struct writer *w, const char *session_dir, __u64 t)
{
	struct dirent *de;
	struct stat sb;
	DIR *d = opendir(session_dir);
	int err = 0;

	if (!d)
		return -errno;
	while (!err && (de = readdir(d))) {
		if (de->d_name[0] == '.' ||
		    fstatat(dirfd(d), de->d_name, &sb, AT_SYMLINK_NOFOLLOW) || !S_ISDIR(sb.st_mode))
			continue;
		err = add_dir(w, session_dir, de->d_name, t);
	}
	closedir(d);
	return err;
}

/* The symbols of every file the kept sidebands name, as the files are now. */
static int add_symtabs(struct writer *w)
{
	struct rk_symtab tab;
	long long n;
	void *desc;
	size_t i;
	int err = 0;

	for (i = 0; !err && i < w->nmaps; i++) {
		if (rk_symtab__load_file(&tab, w->maps[i]) || !tab.nsyms) {
			rk_symtab__release(&tab);
			continue;
		}
		n = rk_symtab__note(&tab, &desc);
		rk_symtab__release(&tab);
		if (n < 0)
			return (int)n;
		err = note_add(w, RK_NOTE_SYMTAB, desc, (size_t)n);
		free(desc);
		w->st->symtabs++;
	}
	return err;
}

/*
 * What the session had not recorded when the bundle was written ("losses",
 * "loss KEY N"): its readers say their figures may be short by as much.
 * Nothing without a stat file (not known, for a reader).
 */
static int describe_loss(struct writer *w, const char *session_dir)
{
	struct rk_session_stat st;
	struct rk_loss l;
	char text[2048];

	if (rk_session_stat_read(session_dir, &st))
		return 0;
	rk_loss_from_stat(&l, &st);
	return rk_loss_note(&l, text, sizeof(text)) > 0 ? text_add(w, text) : 0;
}

/* The description: what, when, why; then the buffers' names (added as they went in). */
static int describe(struct writer *w, const char *session_dir, __u64 t, const char *why)
{
	const char *name = strrchr(session_dir, '/');
	char line[1200], reason[1024];
	struct utsname u;
	int err;

	snprintf(reason, sizeof(reason), "%s", why && *why ? why : "manual");
	rk_strip_controls(reason);
	snprintf(line, sizeof(line),
		 "bundle %d\nsession %s\nsnapshot time %llu\nsnapshot realtime %llu\nreason %s\n",
		 RK_BUNDLE_VERSION, name ? name + 1 : session_dir, (unsigned long long)t,
		 (unsigned long long)(rk_now_real_ns() - (rk_now_mono_ns() - t)), reason);
	err = text_add(w, line);
	if (!err && w->o->pid) {
		snprintf(line, sizeof(line), "pid %u\n", w->o->pid);
		err = text_add(w, line);
	}
	if (!err && !uname(&u)) {
		snprintf(line, sizeof(line), "host %s\nkernel %s\n", rk_strip_controls(u.nodename),
			 rk_strip_controls(u.release));
		err = text_add(w, line);
	}
	if (!err)
		err = describe_loss(w, session_dir);
	return err;
}

/* The ELF header and the one program header, once the notes' size is known. */
static int finish(struct writer *w)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	off_t end = (off_t)(NOTES_OFF + w->notes_bytes);

	rk_elfcore_ehdr(&eh);
	eh.e_phnum = 1;
	memset(&ph, 0, sizeof(ph));
	ph.p_type = PT_NOTE;
	ph.p_offset = NOTES_OFF;
	ph.p_filesz = w->notes_bytes;
	ph.p_align = 4;
	/* Zero pages were seeked over (rk_write_sparse()): a trailing hole needs the size set. */
	if (ftruncate(w->fd, end) || pwrite(w->fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
	    pwrite(w->fd, &ph, sizeof(ph), sizeof(eh)) != (ssize_t)sizeof(ph))
		return errno ? -errno : -EIO;
	w->st->bytes = (__u64)end;
	return fsync(w->fd) ? -errno : 0;
}

/* The notes, in the order the file has them. */
static int write_notes(struct writer *w, const char *session_dir, __u64 t, const char *why)
{
	void *td = NULL;
	size_t tdlen = 0;
	int err;

	if (lseek(w->fd, (off_t)NOTES_OFF, SEEK_SET) < 0)
		return -errno;
	err = describe(w, session_dir, t, why);
	if (!err)
		err = add_session(w, session_dir, t);
	if (!err && !w->st->buffers)
		err = -ENODATA;
	if (!err && !rk_tracedata_load(session_dir, &td, &tdlen)) {
		err = note_add(w, RK_NOTE_TRACEDATA, td, tdlen);
		free(td);
	}
	if (!err && !w->o->no_symbols)
		err = add_symtabs(w);
	if (!err)
		err = note_add(w, RK_NOTE_SESSION, w->text, w->text_len);
	return err ? err : finish(w);
}

/* The temporary file next to @out_path: mode 0600, created here (O_EXCL). */
static int make_temp(const char *out_path, char *tmp, size_t len, const struct rk_bundle_opts *o)
{
	const char *slash = strrchr(out_path, '/');
	int fd;

	if (slash)
		snprintf(tmp, len, "%.*s/.%s.XXXXXX", (int)(slash - out_path), out_path, slash + 1);
	else
		snprintf(tmp, len, ".%s.XXXXXX", out_path);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (o->for_uid != (uid_t)-1 && fchown(fd, o->for_uid, o->for_gid)) {
		int err = -errno;

		close(fd);
		unlink(tmp);
		return err;
	}
	return fd;
}

/* Into place: never over an existing name unless forced (rename replaces a link itself). */
static int publish(const char *tmp, const char *out_path, int force)
{
	if (force)
		return rename(tmp, out_path) ? -errno : 0;
	if (!renameat2(AT_FDCWD, tmp, AT_FDCWD, out_path, RENAME_NOREPLACE))
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -errno;
	/* A filesystem without RENAME_NOREPLACE: link() refuses an existing name too. */
	if (link(tmp, out_path))
		return -errno;
	unlink(tmp);
	return 0;
}

int rk_bundle_write(const char *session_dir, __u64 t, const char *why, const char *out_path,
		    const struct rk_bundle_opts *o, struct rk_bundle_stats *st)
{
	struct writer w = { .o = o, .st = st };
	char tmp[PATH_MAX];
	struct stat sb;
	size_t i;
	int err;

	memset(st, 0, sizeof(*st));
	if (stat(session_dir, &sb) || !S_ISDIR(sb.st_mode))
		return -ENOENT;
	if (!o->force && !lstat(out_path, &sb))
		return -EEXIST;
	st->settled = o->settle_ms > 0 ? settle(session_dir, t, o->settle_ms) : 1;
	w.fd = make_temp(out_path, tmp, sizeof(tmp), o);
	if (w.fd < 0)
		return w.fd;
	err = write_notes(&w, session_dir, t, why);
	if (close(w.fd) && !err)
		err = -errno;
	if (!err)
		err = publish(tmp, out_path, o->force);
	if (err)
		unlink(tmp);
	for (i = 0; i < w.nmaps; i++)
		free(w.maps[i]);
	free(w.maps);
	free(w.text);
	return err;
}
