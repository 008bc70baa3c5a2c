/* plan_cache.h: what the plan caches of both devices share (docs/CACHE.md,
 * "The plan cache"): the weights' identity for the key and their
 * fingerprint for the entry, the freshness rule for a stored entry, the
 * warning callback, sidecar paths. api/cuda_api.c keys and stores CUDA
 * plans (codegen/cg_io.c), api/cpu_api.c cpu plans (codegen/cl_io.c).
 * Prefix: api_pc_. */
#ifndef SINTER_API_PLAN_CACHE_H
#define SINTER_API_PLAN_CACHE_H

#include "api/model.h"
#include "codegen/cg.h"

/* The weights' identity into id[cap] ("file REALPATH", several as "file
 * A; file B", then "; prefix P" when a key prefix is in force; "random
 * seed=S", "none") and their files' fingerprint (sizes, mtimes, inodes,
 * folded together) into info. */
void api_pc_weights_id(const sinter_model *m, char *id, size_t cap, cg_plan_info *info);
/* XXH3-128 of a whole file's content into h (false when unreadable). */
bool api_pc_file_hash(const char *path, uint8_t h[16]);
/* Fills info's version, source and weights' content hash for an entry
 * about to be written (the fingerprint is api_pc_weights_id's). */
void api_pc_info_for_write(const sinter_model *m, cg_plan_info *info);
/* NULL when a stored entry with info have is current for m (want: what
 * api_pc_weights_id gave now; a fingerprint that differs is a hit still
 * when the content hashes the same); else what changed ("the weights",
 * "sinter"). */
const char *api_pc_stale(const sinter_model *m, const cg_plan_info *want, const cg_plan_info *have);
/* path with ".plan" replaced by ext (".key", ".tune") into out[cap]. */
void api_pc_sidecar(const char *plan_path, const char *ext, char *out, size_t cap);
/* "model HASH\nshapes NAME:[D,..] ...\n": the model's part of a key's
 * components (the .key file beside a stored plan, sinter cache explain):
 * the hash of its canonical text and its inputs' shapes spelled out. */
void api_pc_model_components(const sinter_model *m, sn_buf *b);
/* sinter cache explain's miss: among the .key files under dir/plans of
 * one device (cpu: those with a line "device cpu ...", else the others),
 * the one with the fewest of labels differing from ours ("label value"
 * lines), and each label that differs, appended to b as indented lines;
 * or that there is none. */
void api_pc_explain_nearest(const char *dir, const char *ours, bool cpu, const char *const *labels, size_t nlabels,
			    sn_buf *b);
/* The warning sink when o->warn is unset: "sinter: warning: msg" on stderr. */
void api_warn_stderr(void *ctx, const char *msg);
/* o->warn (stderr when unset) with a formatted message. */
void api_pc_warn(const sinter_compile_options *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
