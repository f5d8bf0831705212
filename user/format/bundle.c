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
 * tables, the session description (its "buffer N SOURCE/TID" lines are
 * known only then; readers take it wherever it is), and last the
 * checksums of everything before them (RK_NOTE_CHECKSUM).
 *
 * Bounded (opts->max_bytes, RK_SYMTAB_LIM_*, RK_BUNDLE_MAX_MAPS): before a
 * note goes in, the room is checked for it and for what must follow it
 * (the description, with RESERVE bytes for what it will say was left out,
 * and the checksums); what does not fit is left out and counted, and a
 * symbol table is loaded within the room left, so that memory follows the
 * limits, not what a traced user mapped.
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
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include "bundle.h"
#include "elfcore.h"
#include "session.h"
#include "symtab.h"
#include "tracedata.h"
#include "util.h"

#define PAGE RK_PAGE_SIZE
#define NOTES_OFF (sizeof(Elf64_Ehdr) + sizeof(Elf64_Phdr))
#define ALIGN4(x) (((x) + 3) & ~(__u64)3)
/* A note's header and owner, before its desc. */
#define NOTE_HEAD 24u
/* "symbols trimmed" lines of the description, at most (then "in N more files"). */
#define TRIM_TEXT 8192u
/* What the description says at its end (limit, left out, trimmed), at most. */
#define RESERVE (TRIM_TEXT + 1024u)
/* One checksum entry: u64 offset, u64 size, u32 crc, u32 type. */
#define CSUM_ENTRY 24u

static void put_u32(__u8 *p, __u32 v)
{
	memcpy(p, &v, 4);
}

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

/*
 * A mapped file a kept sideband names, and which file it was: its device
 * and inode as the kernel (or /proc/PID/maps) gave them, or its build id
 * (PERF_RECORD_MISC_MMAP_BUILD_ID). The path is only a name: another file
 * may be there now.
 */
struct mapped {
	char *name;
	int by_id;
	__u32 maj, min;
	__u64 ino;
	char build_id[RK_BUILD_ID_HEX];
};

/* One checksummed range of the file: the headers (type 0) or a note. */
struct sum {
	__u64 off, size;
	__u32 crc, type;
};

/* A bundle being written. */
struct writer {
	int fd;
	__u64 notes_bytes;
	char *text; /* the session note */
	size_t text_len, nbuf;
	struct mapped *maps; /* mapped files named by the sidebands kept */
	size_t nmaps;
	struct sum *sums; /* [0]: the headers, written last */
	size_t nsums;
	/* Left out for the size limit (maps: past RK_BUNDLE_MAX_MAPS). */
	size_t out_buffers, out_sidebands, out_tracedata, out_symtabs, out_maps;
	char trim[TRIM_TEXT]; /* "symbols trimmed" lines */
	size_t trim_len, trim_more;
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

/* A range's entry; @w->sums grows by one (the caller knows it has room for the count). */
static int sum_add(struct writer *w, __u64 off, __u64 size, __u32 crc, __u32 type)
{
	struct sum *v = realloc(w->sums, (w->nsums + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	w->sums = v;
	v[w->nsums++] = (struct sum){ off, size, crc, type };
	return 0;
}

static int note_add(struct writer *w, __u32 type, const void *data, size_t size)
{
	struct rk_core_note nt = { type, -1, data, size };
	__u64 bytes = rk_elfcore_note_size(&nt);
	int err = sum_add(w, NOTES_OFF + w->notes_bytes, bytes, rk_elfcore_note_crc(&nt, 0), type);

	if (!err)
		err = rk_elfcore_note_write(w->fd, &nt);
	if (!err)
		w->notes_bytes += bytes;
	return err;
}

/* The checksum note's desc size with @n ranges. */
static __u64 sums_size(size_t n)
{
	return 8 + (__u64)n * CSUM_ENTRY + 4;
}

/*
 * What must follow @extra more notes: the description (@text_more more
 * bytes of it, and RESERVE) and the checksums (the headers, each note, the
 * description).
 */
static __u64 tail_bytes(const struct writer *w, size_t extra, size_t text_more)
{
	return NOTE_HEAD + ALIGN4(w->text_len + text_more + RESERVE) + NOTE_HEAD +
	       sums_size(w->nsums + extra + 1);
}

/*
 * The desc bytes a note may still take under the size limit, with
 * @text_more bytes of description coming with it (UINT64_MAX: no limit).
 */
static __u64 room(const struct writer *w, size_t text_more)
{
	__u64 used = NOTES_OFF + w->notes_bytes + NOTE_HEAD + 3 + tail_bytes(w, 1, text_more);

	if (!w->o->max_bytes)
		return UINT64_MAX;
	return w->o->max_bytes > used ? w->o->max_bytes - used : 0;
}

/* MMAP2's identity of the file: maj, min, ino (or the build id), after pid, tid, addr, len, pgoff. */
#define MMAP2_ID_OFF (sizeof(struct perf_event_header) + 8 + 24)

/* Which file @h mapped, into @m (its name set by the caller). */
static void map_identity(const struct perf_event_header *h, struct mapped *m)
{
	const __u8 *id = (const __u8 *)h + MMAP2_ID_OFF;
	size_t k;

	m->by_id = !!(h->misc & PERF_RECORD_MISC_MMAP_BUILD_ID);
	if (!m->by_id) {
		memcpy(&m->maj, id, 4);
		memcpy(&m->min, id + 4, 4);
		memcpy(&m->ino, id + 8, 8);
		return;
	}
	/* u8 size, 3 reserved, then up to 20 bytes. */
	for (k = 0; k < id[0] && k < 20; k++)
		snprintf(m->build_id + 2 * k, 3, "%02x", id[4 + k]);
}

static int same_mapped(const struct mapped *a, const struct mapped *b)
{
	if (strcmp(a->name, b->name) || a->by_id != b->by_id)
		return 0;
	return a->by_id ? !strcmp(a->build_id, b->build_id) :
			  a->maj == b->maj && a->min == b->min && a->ino == b->ino;
}

/* Each mapped file (a path, or [vdso]) once, with which file it was: their tables go in. */
static int map_take(const struct perf_event_header *h, void *ctx)
{
	struct writer *w = ctx;
	const char *name = rk_mmap2_name(h);
	struct mapped m = { 0 }, *v;
	size_t i;

	if (!name || (name[0] != '/' && strcmp(name, "[vdso]")))
		return 0;
	m.name = (char *)name;
	map_identity(h, &m);
	for (i = 0; i < w->nmaps; i++)
		if (same_mapped(&w->maps[i], &m))
			return 0;
	if (w->nmaps == RK_BUNDLE_MAX_MAPS) {
		w->out_maps++; /* may count one file twice: a bound, not a list */
		return 0;
	}
	v = realloc(w->maps, (w->nmaps + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	w->maps = v;
	m.name = strdup(name);
	if (!m.name)
		return -ENOMEM;
	w->maps[w->nmaps++] = m;
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
	if (src)
		snprintf(line, sizeof(line), "buffer %zu %s/%s\n", w->nbuf, src, name);
	/* Over the size limit: left out, counted (the description says how many). */
	if (size > room(w, src ? strlen(line) : 0)) {
		if (src)
			w->out_buffers++;
		else
			w->out_sidebands++;
		free(image);
		return 0;
	}
	w->st->kept += cut.kept;
	w->st->after += cut.after;
	w->st->overwritten += cut.overwritten;
	err = note_add(w, src ? RK_NOTE_BUFFER : RK_NOTE_SIDEBAND, image, size);
	if (!err && src) {
		w->nbuf++;
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

/*
 * The mapped file @m, opened as the bundle's user would open it (open_as():
 * with --for-user, that user's fsuid and fsgid decide, never root's) and
 * only if it is the file that was mapped: the same device and inode (the
 * path is a name a user may have pointed elsewhere since, a symlink to a
 * file only root reads). -1 if not; a build id is checked once read.
 */
static int open_mapped(struct writer *w, const struct mapped *m)
{
	struct stat sb;
	int fd = open_as(AT_FDCWD, m->name, w->o);

	if (fd < 0) {
		w->st->symtabs_left++;
		return -1;
	}
	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode) ||
	    (!m->by_id &&
	     (major(sb.st_dev) != m->maj || minor(sb.st_dev) != m->min || sb.st_ino != m->ino))) {
		close(fd);
		w->st->symtabs_left++;
		return -1;
	}
	return fd;
}

/*
 * @m's table within @lim, if the file there now is the one mapped.
 * Return: 0 (@tab maybe empty, or trimmed: its flags say).
 */
static int load_mapped(struct writer *w, const struct mapped *m, const struct rk_symtab_limits *lim,
		       struct rk_symtab *tab)
{
	int fd, err;

	if (!strcmp(m->name, "[vdso]"))
		return rk_symtab__load_file_lim(tab, m->name, lim);
	fd = open_mapped(w, m);
	err = rk_symtab__load_fd_lim(tab, m->name, fd, lim);
	if (fd >= 0)
		close(fd);
	if (!err && m->by_id && strcmp(tab->build_id, m->build_id)) {
		w->st->symtabs_left++;
		err = -ESTALE;
	}
	return err;
}

/* "symbols trimmed ...: PATH", while the lines fit in TRIM_TEXT (then counted). */
static void trim_add(struct writer *w, const struct rk_symtab *t)
{
	char path[4200], line[TRIM_TEXT];
	int n;

	w->st->trimmed++;
	snprintf(path, sizeof(path), "%s", t->path);
	n = snprintf(line, sizeof(line), "symbols trimmed %llu left out, %llu names cut%s: %s\n",
		     (unsigned long long)t->dropped, (unsigned long long)t->cut,
		     t->flags & RK_SYMTAB_F_REFUSED ? ", a section over its limit not read" : "",
		     rk_strip_controls(path));
	/* Room for it and the NUL describe_limits() puts after the last one. */
	if (n < 0 || (size_t)n >= sizeof(w->trim) - w->trim_len) {
		w->trim_more++;
		return;
	}
	memcpy(w->trim + w->trim_len, line, (size_t)n);
	w->trim_len += (size_t)n;
}

/*
 * The symbols of every file the kept sidebands name, if the file there now
 * is the one mapped, each within the per-file limits and the room left in
 * the bundle.
 */
static int add_symtabs(struct writer *w)
{
	struct rk_symtab_limits lim;
	struct rk_symtab tab;
	long long n;
	void *desc;
	size_t i;
	int err = 0;

	rk_symtab_limits_bundle(&lim);
	for (i = 0; !err && i < w->nmaps; i++) {
		__u64 left = room(w, 0);

		if (left < lim.note)
			lim.note = left;
		/* No room for a header and one symbol: the rest are left out. */
		if (lim.note < 256) {
			w->out_symtabs += w->nmaps - i;
			break;
		}
		if (load_mapped(w, &w->maps[i], &lim, &tab) || (!tab.nsyms && !tab.flags)) {
			rk_symtab__release(&tab);
			continue;
		}
		if (tab.flags)
			trim_add(w, &tab);
		if (!tab.nsyms) {
			rk_symtab__release(&tab);
			continue;
		}
		n = rk_symtab__note(&tab, &desc);
		rk_symtab__release(&tab);
		if (n < 0)
			return (int)n;
		if ((__u64)n <= room(w, 0)) {
			err = note_add(w, RK_NOTE_SYMTAB, desc, (size_t)n);
			w->st->symtabs++;
		} else {
			w->out_symtabs++;
		}
		free(desc);
	}
	return err;
}

/* What the limits left out, said at the description's end (within RESERVE). */
static int describe_limits(struct writer *w)
{
	char line[512];
	size_t out = w->out_buffers + w->out_sidebands + w->out_tracedata + w->out_symtabs;
	int err = 0;

	w->st->left_out = out + w->out_maps;
	if (w->o->max_bytes) {
		snprintf(line, sizeof(line), "size limit %llu\n",
			 (unsigned long long)w->o->max_bytes);
		err = text_add(w, line);
	}
	if (!err && (out || w->out_maps)) {
		snprintf(line, sizeof(line),
			 "left out buffers %zu sidebands %zu tracedata %zu symtabs %zu files %zu\n",
			 w->out_buffers, w->out_sidebands, w->out_tracedata, w->out_symtabs,
			 w->out_maps);
		err = text_add(w, line);
	}
	if (!err && w->trim_len) {
		w->trim[w->trim_len] = '\0';
		err = text_add(w, w->trim);
	}
	if (!err && w->trim_more) {
		snprintf(line, sizeof(line), "symbols trimmed in %zu more files\n", w->trim_more);
		err = text_add(w, line);
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
	/* "checksum crc32": a reader that finds no checksum note knows the bundle is damaged. */
	snprintf(line, sizeof(line),
		 "bundle %d\nsession %s\nsnapshot time %llu\nsnapshot realtime %llu\nreason %s\n"
		 "checksum crc32\n",
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

/*
 * The checksums, last note, then the ELF header and the one program header
 * (their range is the first checksummed, so they are laid out first).
 */
static int finish(struct writer *w)
{
	size_t i, n = w->nsums, size = (size_t)sums_size(n);
	__u8 *desc, *q;
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	off_t end;
	__u32 crc;
	int err;

	rk_elfcore_ehdr(&eh);
	eh.e_phnum = 1;
	memset(&ph, 0, sizeof(ph));
	ph.p_type = PT_NOTE;
	ph.p_offset = NOTES_OFF;
	ph.p_filesz = w->notes_bytes + NOTE_HEAD + size;
	ph.p_align = 4;
	end = (off_t)(NOTES_OFF + ph.p_filesz);
	crc = (__u32)crc32(crc32(0, NULL, 0), (const Bytef *)&eh, sizeof(eh));
	w->sums[0].crc = (__u32)crc32(crc, (const Bytef *)&ph, sizeof(ph));
	desc = malloc(size);
	if (!desc)
		return -ENOMEM;
	put_u32(desc, 1);
	put_u32(desc + 4, (__u32)n);
	for (i = 0, q = desc + 8; i < n; i++, q += CSUM_ENTRY) {
		memcpy(q, &w->sums[i].off, 8);
		memcpy(q + 8, &w->sums[i].size, 8);
		memcpy(q + 16, &w->sums[i].crc, 4);
		memcpy(q + 20, &w->sums[i].type, 4);
	}
	/* Its own CRC32: of its note header and owner, then of the desc before it. */
	{
		__u32 hdr[3] = { sizeof(RK_NOTE_OWNER), (__u32)size, RK_NOTE_CHECKSUM };
		char owner[ALIGN4(sizeof(RK_NOTE_OWNER))] = RK_NOTE_OWNER;

		crc = (__u32)crc32(crc32(0, NULL, 0), (const Bytef *)hdr, sizeof(hdr));
		crc = (__u32)crc32(crc, (const Bytef *)owner, sizeof(owner));
		put_u32(q, (__u32)crc32(crc, desc, (uInt)(size - 4)));
	}
	{
		struct rk_core_note nt = { RK_NOTE_CHECKSUM, -1, desc, size };

		err = rk_elfcore_note_write(w->fd, &nt);
	}
	free(desc);
	if (err)
		return err;
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
	/* The headers' range: its CRC once they are known (finish()). */
	err = sum_add(w, 0, NOTES_OFF, 0, 0);
	if (!err)
		err = describe(w, session_dir, t, why);
	if (!err)
		err = add_session(w, session_dir, t);
	if (!err && !w->st->buffers)
		err = w->out_buffers ? -EFBIG : -ENODATA;
	if (!err && !rk_tracedata_load(session_dir, &td, &tdlen)) {
		if (tdlen <= room(w, 0))
			err = note_add(w, RK_NOTE_TRACEDATA, td, tdlen);
		else
			w->out_tracedata++;
		free(td);
	}
	if (!err && !w->o->no_symbols)
		err = add_symtabs(w);
	if (!err)
		err = describe_limits(w);
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
		free(w.maps[i].name);
	free(w.maps);
	free(w.text);
	free(w.sums);
	return err;
}
