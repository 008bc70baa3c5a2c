/* onnx.h: ONNX import. Reads a model (onnx_pb.h decodes the protobuf),
 * translates its nodes to sinter ops (opsets 11 to 22 of the default
 * domain), evaluates at import time every value that does not depend on a
 * graph input (shape subgraphs, constant folding), and keeps weights out of
 * the graph: initializers become params whose values go into a weight
 * store. docs/ONNX.md lists the ops. Prefix: onnx_. */
#ifndef SINTER_ONNX_H
#define SINTER_ONNX_H

#include "frontend/sir.h"
#include "ir/wstore.h"

/* Reads an ONNX model (path; external data files are resolved next to it)
 * into a new graph (free with ir_graph_free) and puts the value of every
 * param into ws (keys = initializer names; param nodes carry them as
 * pname; a value folded at import time that is too large for an inline
 * constant (over 64 elements) gets the key of its ONNX value name;
 * single-element initializers become inline constants). binds as for sir_parse:
 * bind symbolic dims by name (ONNX dim_param names become graph symbols; a
 * dim with neither value nor param gets a fresh symbol named unk0, unk1,
 * ...). Errors: SN_EINPUT "PATH: message" for a malformed or unsupported
 * model (an unsupported op lists every unsupported op type with its count
 * and first node), SN_EUSAGE for a binding of a symbol the model lacks,
 * SN_EINTERNAL on OOM. On error *out is NULL and ws may hold some entries
 * (the caller frees ws). The file is read through ir/file.h (a regular
 * file of at most ONNX_MAX_FILE bytes); external data locations are
 * resolved and confined to the model's folder, and every size is checked
 * before the tensor's memory is allocated. */
#define ONNX_MAX_FILE ((uint64_t)1 << 31) /* protobuf's own limit */
int onnx_load(const char *path, const sir_bind *binds, size_t nbinds, ir_graph **out,
	      ir_wstore *ws, sn_err *e);

/* onnx_load that also hands back the real path of every external data
 * file the model read (*files: an array of *nfiles heap strings, freed
 * with onnx_files_free; NULL and 0 when there are none or on error), so
 * that writers can refuse to replace them. */
int onnx_load_files(const char *path, const sir_bind *binds, size_t nbinds, ir_graph **out,
		    ir_wstore *ws, char ***files, size_t *nfiles, sn_err *e);
void onnx_files_free(char **files, size_t n);

/* The same for a model in memory; name is used in messages (NULL:
 * "<input>"). External data is refused (there is no directory). */
int onnx_load_buffer(const void *buf, size_t len, const char *name, const sir_bind *binds,
		     size_t nbinds, ir_graph **out, ir_wstore *ws, sn_err *e);

#endif
