/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * rec_files.h - the recorder's files as files: who may read one (granted by
 * access.c's rules, or moved aside when that changes), and their retention
 * (--keep-exited, --max-shm and --max-shm-user: the queue of exited
 * threads' files, per-user accounts, room made for a new thread).
 * Owns: r->gone, r->ushm, r->aside.
 * May call: rec_src, access, util.
 */
#ifndef RK_REC_FILES_H
#define RK_REC_FILES_H

#include "rec.h"

/*
 * Let @reader read the file at @path (a file we just created: root's, 0600).
 * Return: 1 if granted, 0 if it stays root's.
 */
int rec_grant(struct rk_rec *r, const char *path, int can, uid_t reader);
void rec_move_aside(struct rk_rec *r, const char *path, __u32 tid);
void rec_shm_account(struct rk_rec *r, __u32 uid, int64_t bytes);
/*
 * Before a record of @size goes into file @k of @t past its grow_at: count
 * the pages it may fill in --max-shm (making room from exited files as a
 * new thread would). Return: 1, or 0 if they do not fit (do not write it).
 */
int rec_shm_grow(struct rk_rec *r, struct rk_thread *t, int k, size_t size);
/* @path (@bytes of --max-shm's count) joins the retention queue, if there is one. */
void rec_gone_push_path(struct rk_rec *r, const char *path, uint64_t bytes, __u32 uid);
/* An exited thread's files join the retention queue. */
void rec_gone_push(struct rk_rec *r, struct rk_thread *t);
void rec_gone_renamed(struct rk_rec *r, const char *from, const char *to);
/* Room for @need more bytes of @uid's files under --max-shm: 1, or 0 if none can be made. */
int rec_gone_room(struct rk_rec *r, uint64_t need, __u32 uid);
/* The same under --max-shm-user, of @uid's own files only. */
int rec_gone_room_user(struct rk_rec *r, uint64_t need, __u32 uid);
void rec_retention_tick(struct rk_rec *r, uint64_t now);
void rec_gone_free(struct rk_rec *r);

/*
 * rec_err_full() - say that creating @path (@what: "create") failed for
 * want of space: which filesystem holds the root, how full it is, what to
 * do; @then ends the line ("" or "; ...").
 */
void rec_err_full(const struct rk_rec *r, const char *what, const char *path, const char *then);

#endif /* RK_REC_FILES_H */
