/* sir_parse.c: the .sir parser (grammar: docs/IR.md). A recursive descent
 * over the lexer's tokens that builds the graph through the builder API, so
 * every shape and dtype rule is checked where the value is written. */
#include "sir.h"
#include "sir_lex.h"
#include "ir/file.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_RESULTS = IR_MAX_LIST };

typedef struct name_slot {
	const char *s; /* node name (arena), NULL if the slot is free */
	ir_ref r;
} name_slot;

typedef struct parser {
	sir_lexer L;
	ir_graph *g;
	sn_err *e;
	const sir_bind *binds;
	size_t nbinds;
	bool *bind_used;
	name_slot *names; /* open addressing, power-of-two capacity */
	size_t ncap, nnames;
	ir_ref *ops; /* operand scratch (heap) */
	size_t opcap;
	uint8_t *bytes; /* const value scratch (heap) */
	size_t bcap;
	ir_dtype *rtypes; /* declared result types (heap) */
	ir_shape *rshapes;
	uint32_t nres;
	ir_ref *upd; /* state k's new value (update statements), IR_NONE until given (heap) */
	sir_tok *updtok; /* where state k was declared */
} parser;

#define TOK (&P->L.tok)

static int oom(parser *P)
{
	return sn_errf(P->e, SN_EINTERNAL, "out of memory");
}

static int next(parser *P)
{
	return sir_next(&P->L);
}

static int expected(parser *P, const char *what)
{
	char d[64];
	sir_tok_desc(TOK, d, sizeof d);
	return sir_diag_at(&P->L, TOK, "expected %s, found %s", what, d);
}

/* Checks the current token's kind and moves past it. */
static int expect(parser *P, sir_tok_kind k, const char *what)
{
	if (TOK->kind != k)
		return expected(P, what);
	return next(P);
}

/* ---- value names ---- */

static uint64_t hash_name(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211u;
	return h;
}

static ir_ref lookup(const parser *P, const char *s, size_t n)
{
	if (!P->ncap)
		return IR_NONE;
	for (size_t i = hash_name(s, n) & (P->ncap - 1);; i = (i + 1) & (P->ncap - 1)) {
		const name_slot *sl = &P->names[i];
		if (!sl->s)
			return IR_NONE;
		if (strlen(sl->s) == n && memcmp(sl->s, s, n) == 0)
			return sl->r;
	}
}

static int insert(parser *P, const char *s, ir_ref r)
{
	if (2 * (P->nnames + 1) > P->ncap) {
		size_t cap = P->ncap ? 2 * P->ncap : 256;
		name_slot *t = calloc(cap, sizeof *t);
		if (!t)
			return oom(P);
		for (size_t i = 0; i < P->ncap; i++) {
			if (!P->names[i].s)
				continue;
			size_t j = hash_name(P->names[i].s, strlen(P->names[i].s)) & (cap - 1);
			while (t[j].s)
				j = (j + 1) & (cap - 1);
			t[j] = P->names[i];
		}
		free(P->names);
		P->names = t;
		P->ncap = cap;
	}
	size_t j = hash_name(s, strlen(s)) & (P->ncap - 1);
	while (P->names[j].s)
		j = (j + 1) & (P->ncap - 1);
	P->names[j] = (name_slot){s, r};
	P->nnames++;
	return SN_OK;
}

/* Gives node r the name in token t and records where it was written. */
static int name_node(parser *P, ir_ref r, const sir_tok *t, const sir_tok *at)
{
	char *s = sn_strndup(P->g->arena, t->s, t->n);
	if (!s)
		return oom(P);
	P->g->nodes[r].name = s;
	P->g->nodes[r].line = at->line;
	P->g->nodes[r].col = at->col;
	return insert(P, s, r);
}

static int check_new_name(parser *P, const sir_tok *t)
{
	if (lookup(P, t->s, t->n) != IR_NONE)
		return sir_diag_at(&P->L, t, "value %%%.*s is already defined", (int)t->n, t->s);
	return SN_OK;
}

/* ---- numbers, strings, symbols ---- */

static int tok_int(parser *P, const char *what, int64_t *v)
{
	if (TOK->kind == SIR_INT && TOK->overflow)
		return sir_diag_at(&P->L, TOK, "integer %.*s is out of range", (int)TOK->n, TOK->s);
	if (TOK->kind != SIR_INT)
		return expected(P, what);
	*v = TOK->ival;
	return SN_OK;
}

/* The number in the current token, read by strtod (f32: strtof, so a float
 * is rounded once). Returns false if the token is not a number. */
static bool tok_float(parser *P, bool f32, double *v)
{
	if (sir_tok_is(TOK, "inf")) {
		*v = INFINITY;
		return true;
	}
	if (sir_tok_is(TOK, "nan")) {
		*v = NAN;
		return true;
	}
	if (TOK->kind != SIR_INT && TOK->kind != SIR_FLOAT)
		return false;
	char buf[128];
	char *s = buf;
	if (TOK->n < sizeof buf) {
		memcpy(buf, TOK->s, TOK->n);
		buf[TOK->n] = 0;
	} else if (!(s = sn_strndup(P->g->arena, TOK->s, TOK->n))) {
		*v = 0;
		return true;
	}
	*v = f32 ? (double)strtof(s, NULL) : strtod(s, NULL);
	return true;
}

/* A string token's body with \" and \\ undone, in the graph's arena. */
static char *tok_string(parser *P)
{
	char *s = sn_alloc(P->g->arena, TOK->n + 1);
	if (!s)
		return NULL;
	size_t k = 0;
	for (size_t i = 0; i < TOK->n; i++) {
		if (TOK->s[i] == '\\' && i + 1 < TOK->n)
			i++;
		s[k++] = TOK->s[i];
	}
	s[k] = 0;
	return s;
}

/* A symbol in a type or dims attribute: its bound value, or a symbol id. */
static int symbol_dim(parser *P, int64_t *d)
{
	for (size_t i = 0; i < P->nbinds; i++)
		if (strlen(P->binds[i].name) == TOK->n && memcmp(P->binds[i].name, TOK->s, TOK->n) == 0) {
			P->bind_used[i] = true;
			*d = P->binds[i].value;
			return SN_OK;
		}
	int k = ir_sym(P->g, TOK->s, TOK->n);
	if (k < 0)
		return sir_diag_at(&P->L, TOK, "too many symbols: '%.*s' would be symbol %d (at most %d)",
				   (int)TOK->n, TOK->s, IR_MAX_SYMS + 1, IR_MAX_SYMS);
	*d = IR_SYM(k);
	return SN_OK;
}

/* ---- types ---- */

/* dtype '[' [dim {',' dim}] ']' with dim = integer | symbol. */
static int parse_type(parser *P, ir_dtype *t, ir_shape *s)
{
	int rc;
	if (TOK->kind != SIR_IDENT)
		return expected(P, "a type");
	int dt = ir_dtype_parse(TOK->s, TOK->n);
	if (dt < 0)
		return sir_diag_at(&P->L, TOK, "unknown dtype '%.*s'", (int)TOK->n, TOK->s);
	*t = (ir_dtype)dt;
	memset(s, 0, sizeof *s);
	if ((rc = next(P)) || (rc = expect(P, SIR_LBRACK, "'[' after the dtype")))
		return rc;
	if (TOK->kind == SIR_RBRACK)
		return next(P);
	for (;;) {
		int64_t d = 0;
		if (s->rank == IR_MAX_RANK)
			return sir_diag_at(&P->L, TOK, "too many dimensions (at most %d)", IR_MAX_RANK);
		if (TOK->kind == SIR_IDENT) {
			if ((rc = symbol_dim(P, &d)))
				return rc;
		} else {
			if ((rc = tok_int(P, "a dimension", &d)))
				return rc;
			if (d < 0)
				return sir_diag_at(&P->L, TOK, "dimension %" PRId64 " is negative", d);
		}
		s->d[s->rank++] = d;
		if ((rc = next(P)))
			return rc;
		if (TOK->kind == SIR_RBRACK)
			return next(P);
		if ((rc = expect(P, SIR_COMMA, "',' or ']' in the shape")))
			return rc;
	}
}

/* ---- attributes ---- */

static const char *enum_choices(ir_attr_type t)
{
	switch (t) {
	case IR_AT_LAYOUT: return "NCHW or NHWC";
	case IR_AT_GELU: return "none or tanh";
	case IR_AT_PADMODE: return "constant, reflect or edge";
	case IR_AT_SCATTER: return "none, add, mul, max or min";
	default: return "a dtype";
	}
}

static int parse_list(parser *P, const ir_attr_info *ai, ir_ints *v)
{
	int rc;
	char what[64];
	snprintf(what, sizeof what, "a list for attribute '%s'", ai->name);
	if (TOK->kind != SIR_LBRACK)
		return expected(P, what);
	if ((rc = next(P)))
		return rc;
	v->n = 0;
	if (TOK->kind == SIR_RBRACK)
		return next(P);
	for (;;) {
		int64_t d = 0;
		if (v->n == IR_MAX_LIST)
			return sir_diag_at(&P->L, TOK, "attribute '%s' has more than %d values", ai->name,
					   IR_MAX_LIST);
		if (ai->type == IR_AT_DIMS && TOK->kind == SIR_IDENT) {
			if ((rc = symbol_dim(P, &d)))
				return rc;
		} else {
			snprintf(what, sizeof what, "an integer in attribute '%s'", ai->name);
			if ((rc = tok_int(P, what, &d)))
				return rc;
			if (ai->type == IR_AT_DIMS && d < -1)
				return sir_diag_at(&P->L, TOK,
						   "dimension %" PRId64 " in attribute '%s' is negative (only -1 is allowed)",
						   d, ai->name);
			if (ai->type == IR_AT_DIMS && d == -1)
				d = IR_DIM_INFER;
		}
		v->v[v->n++] = d;
		if ((rc = next(P)))
			return rc;
		if (TOK->kind == SIR_RBRACK)
			return next(P);
		if ((rc = expect(P, SIR_COMMA, "',' or ']'")))
			return rc;
	}
}

static int parse_attr_value(parser *P, const ir_attr_info *ai, ir_attrs *a)
{
	int rc;
	void *field = (char *)a + ai->offset;
	char what[64];
	switch (ai->type) {
	case IR_AT_INT:
		snprintf(what, sizeof what, "an integer for attribute '%s'", ai->name);
		if ((rc = tok_int(P, what, (int64_t *)field)))
			return rc;
		return next(P);
	case IR_AT_INTS:
	case IR_AT_DIMS:
		return parse_list(P, ai, (ir_ints *)field);
	case IR_AT_BOOL:
		if (sir_tok_is(TOK, "true") || sir_tok_is(TOK, "false")) {
			*(bool *)field = sir_tok_is(TOK, "true");
			return next(P);
		}
		snprintf(what, sizeof what, "true or false for attribute '%s'", ai->name);
		return expected(P, what);
	case IR_AT_FLOAT:
		if (!tok_float(P, false, (double *)field)) {
			snprintf(what, sizeof what, "a number for attribute '%s'", ai->name);
			return expected(P, what);
		}
		return next(P);
	case IR_AT_DTYPE:
	case IR_AT_LAYOUT:
	case IR_AT_GELU:
	case IR_AT_PADMODE:
	case IR_AT_SCATTER: {
		int k = TOK->kind == SIR_IDENT ? ir_enum_parse(ai->type, TOK->s, TOK->n) : -1;
		if (k < 0 && ai->type == IR_AT_DTYPE && TOK->kind == SIR_IDENT)
			return sir_diag_at(&P->L, TOK, "unknown dtype '%.*s'", (int)TOK->n, TOK->s);
		if (k < 0) {
			snprintf(what, sizeof what, "%s for attribute '%s'", enum_choices(ai->type), ai->name);
			return expected(P, what);
		}
		if (ai->type == IR_AT_DTYPE)
			*(ir_dtype *)field = (ir_dtype)k;
		else if (ai->type == IR_AT_LAYOUT)
			*(ir_layout *)field = (ir_layout)k;
		else if (ai->type == IR_AT_GELU)
			*(ir_gelu *)field = (ir_gelu)k;
		else if (ai->type == IR_AT_PADMODE)
			*(ir_padmode *)field = (ir_padmode)k;
		else
			*(ir_scatter *)field = (ir_scatter)k;
		return next(P);
	}
	}
	return SN_OK;
}

/* { name '=' value } up to the next statement; records which were given
 * in *seen and the token of each in at[] (for later messages). */
static int parse_attrs(parser *P, ir_op op, const sir_tok *optok, ir_attrs *a, uint64_t *seen,
		       sir_tok *at)
{
	int rc;
	const ir_op_info *oi = &ir_ops[op];
	*seen = 0;
	while (TOK->kind == SIR_IDENT && !sir_tok_is(TOK, "return") && !sir_tok_is(TOK, "update")) {
		int id = ir_attr_parse(TOK->s, TOK->n);
		if (id < 0)
			return sir_diag_at(&P->L, TOK, "unknown attribute '%.*s'", (int)TOK->n, TOK->s);
		uint64_t bit = UINT64_C(1) << id;
		if (!(oi->attrs & bit))
			return sir_diag_at(&P->L, TOK, "%s has no attribute '%s'", oi->name,
					   ir_attr_table[id].name);
		if (*seen & bit)
			return sir_diag_at(&P->L, TOK, "attribute '%s' is given twice", ir_attr_table[id].name);
		*seen |= bit;
		at[id] = *TOK;
		char what[64];
		snprintf(what, sizeof what, "'=' after attribute '%s'", ir_attr_table[id].name);
		if ((rc = next(P)) || (rc = expect(P, SIR_EQ, what)))
			return rc;
		if ((rc = parse_attr_value(P, &ir_attr_table[id], a)))
			return rc;
	}
	uint64_t missing = oi->required & ~*seen;
	for (int id = 0; id < IR_NATTRS; id++)
		if (missing & (UINT64_C(1) << id))
			return sir_diag_at(&P->L, optok, "%s: missing attribute '%s'", oi->name,
					   ir_attr_table[id].name);
	return SN_OK;
}

/* ---- sources ---- */

/* A builder error (no location) reported at the op's token. */
static int builder_error(parser *P, const sir_tok *optok, const sn_err *be)
{
	if (be->code != SN_EINPUT)
		return sn_errf(P->e, be->code, "%s", be->msg);
	return sir_diag_at(&P->L, optok, "%s", be->msg);
}

/* A node just built: refused here, with its place, when its value could
 * not exist (as ir_verify would refuse it). */
static int built(parser *P, ir_ref r, const sir_tok *tok)
{
	sn_err be = {0};
	if (r != IR_NONE && ir_check_size(P->g, r, &be) != SN_OK)
		return builder_error(P, tok, &be);
	return SN_OK;
}

static int grow_bytes(parser *P, size_t need)
{
	if (need <= P->bcap)
		return SN_OK;
	size_t cap = P->bcap ? P->bcap : 256;
	while (cap < need)
		cap *= 2;
	uint8_t *b = realloc(P->bytes, cap);
	if (!b)
		return oom(P);
	P->bytes = b;
	P->bcap = cap;
	return SN_OK;
}

/* One constant element into P->bytes[i]. */
static int const_value(parser *P, ir_dtype t, size_t i)
{
	int rc;
	size_t sz = ir_dtype_size(t);
	if ((rc = grow_bytes(P, (i + 1) * sz)))
		return rc;
	void *p = P->bytes + i * sz;
	if (t == IR_BOOL) {
		if (!sir_tok_is(TOK, "true") && !sir_tok_is(TOK, "false"))
			return expected(P, "true or false (const bool)");
		*(uint8_t *)p = sir_tok_is(TOK, "true");
		return SN_OK;
	}
	if (ir_dtype_is_float(t)) {
		double v;
		if (!tok_float(P, t == IR_F32, &v))
			return expected(P, "a number");
		if (t == IR_F32) {
			float f = (float)v;
			memcpy(p, &f, sizeof f);
		} else {
			ir_store(t, P->bytes, i, v);
		}
		return SN_OK;
	}
	char what[48];
	snprintf(what, sizeof what, "an integer (const %s)", ir_dtype_name(t));
	int64_t v = 0;
	if ((rc = tok_int(P, what, &v)))
		return rc;
	int64_t lo = INT64_MIN, hi = INT64_MAX;
	if (t == IR_I32)
		lo = INT32_MIN, hi = INT32_MAX;
	else if (t == IR_I8)
		lo = INT8_MIN, hi = INT8_MAX;
	else if (t == IR_U8)
		lo = 0, hi = UINT8_MAX;
	if (v < lo || v > hi)
		return sir_diag_at(&P->L, TOK, "value %" PRId64 " is out of range for %s", v,
				   ir_dtype_name(t));
	if (t == IR_I64)
		memcpy(p, &v, 8);
	else if (t == IR_I32)
		*(int32_t *)p = (int32_t)v;
	else if (t == IR_I8)
		*(int8_t *)p = (int8_t)v;
	else
		*(uint8_t *)p = (uint8_t)v;
	return SN_OK;
}

/* VALUES: a number, or '[' number {',' number} ']' flat in row-major order. */
static int parse_const(parser *P, const sir_tok *optok, ir_ref *r)
{
	int rc;
	ir_dtype t;
	ir_shape s;
	if ((rc = parse_type(P, &t, &s)))
		return rc;
	sir_tok at = *TOK;
	if (!ir_shape_concrete(&s)) {
		char ty[160];
		ir_type_str(P->g, t, &s, ty, sizeof ty);
		return sir_diag_at(&P->L, optok, "const: type %s is not concrete", ty);
	}
	uint64_t numel = 1;
	bool huge = false;
	for (int i = 0; i < s.rank; i++) {
		if (s.d[i] && numel > UINT64_MAX / (uint64_t)s.d[i])
			huge = true;
		numel *= (uint64_t)s.d[i];
	}
	size_t count = 0;
	if (TOK->kind == SIR_LBRACK) {
		if ((rc = next(P)))
			return rc;
		while (TOK->kind != SIR_RBRACK) {
			if (count && (rc = expect(P, SIR_COMMA, "',' or ']' in the constant")))
				return rc;
			if ((rc = const_value(P, t, count)) || (rc = next(P)))
				return rc;
			count++;
		}
	} else {
		if ((rc = const_value(P, t, 0)))
			return rc;
		count = 1;
	}
	if (huge || count != numel) {
		char ty[160];
		ir_type_str(P->g, t, &s, ty, sizeof ty);
		if (huge)
			return sir_diag_at(&P->L, optok, "const: %s has too many elements", ty);
		return sir_diag_at(&P->L, &at, "const: %zu value%s for %s, which has %" PRIu64 " element%s",
				   count, count == 1 ? "" : "s", ty, numel, numel == 1 ? "" : "s");
	}
	if ((rc = next(P)) || (rc = grow_bytes(P, 1)))
		return rc;
	sn_err be = {0};
	*r = ir_add_const(P->g, t, &s, P->bytes, &be);
	return *r == IR_NONE ? builder_error(P, optok, &be) : built(P, *r, optok);
}

static int parse_source(parser *P, ir_op op, const sir_tok *optok, ir_ref *r)
{
	int rc;
	ir_dtype t;
	ir_shape s;
	sn_err be = {0};
	if ((rc = next(P)))
		return rc;
	if (op == IR_OP_const)
		return parse_const(P, optok, r);
	if ((rc = parse_type(P, &t, &s)))
		return rc;
	if (op == IR_OP_param) {
		if (TOK->kind != SIR_STRING)
			return expected(P, "the param's key as a string");
		if (TOK->n == 0)
			return sir_diag_at(&P->L, TOK, "param: the key is empty");
		char *key = tok_string(P);
		if (!key)
			return oom(P);
		if ((rc = next(P)))
			return rc;
		*r = ir_add_param(P->g, key, t, &s, &be);
	} else {
		ir_attrs a;
		uint64_t seen;
		sir_tok at[IR_NATTRS];
		ir_attrs_init(IR_OP_iota, &a);
		if ((rc = parse_attrs(P, IR_OP_iota, optok, &a, &seen, at)))
			return rc;
		*r = ir_add_iota(P->g, t, &s, a.axis, &be);
	}
	return *r == IR_NONE ? builder_error(P, optok, &be) : built(P, *r, optok);
}

/* ---- statements ---- */

static int push_operand(parser *P, size_t n, ir_ref r)
{
	if (n == P->opcap) {
		size_t cap = P->opcap ? 2 * P->opcap : 16;
		ir_ref *o = realloc(P->ops, cap * sizeof *o);
		if (!o)
			return oom(P);
		P->ops = o;
		P->opcap = cap;
	}
	P->ops[n] = r;
	return SN_OK;
}

/* res {',' res} '=' (source | op '(' [operand {',' operand}] ')' attrs) */
static int parse_stmt(parser *P)
{
	int rc;
	sir_tok res[MAX_RESULTS];
	uint32_t nres = 0;
	for (;;) {
		if (TOK->kind != SIR_LOCAL)
			return expected(P, "a value name");
		if (nres == MAX_RESULTS)
			return sir_diag_at(&P->L, TOK, "too many results (at most %d)", MAX_RESULTS);
		if ((rc = check_new_name(P, TOK)))
			return rc;
		for (uint32_t i = 0; i < nres; i++)
			if (res[i].n == TOK->n && memcmp(res[i].s, TOK->s, TOK->n) == 0)
				return sir_diag_at(&P->L, TOK, "value %%%.*s is already defined",
						   (int)TOK->n, TOK->s);
		res[nres++] = *TOK;
		if ((rc = next(P)))
			return rc;
		if (TOK->kind != SIR_COMMA)
			break;
		if ((rc = next(P)))
			return rc;
	}
	if ((rc = expect(P, SIR_EQ, nres > 1 ? "',' or '='" : "'=' after the value name")))
		return rc;
	if (TOK->kind != SIR_IDENT)
		return expected(P, "an op name");
	sir_tok optok = *TOK;
	int op = ir_op_parse(TOK->s, TOK->n);
	if (op < 0)
		return sir_diag_at(&P->L, TOK, "unknown op '%.*s'", (int)TOK->n, TOK->s);
	if (op == IR_OP_input)
		return sir_diag_at(&P->L, TOK, "input: inputs are declared in the function signature");
	if (nres > 1 && op != IR_OP_split)
		return sir_diag_at(&P->L, &optok, "%s defines one value, not %u (only split defines several)",
				   ir_ops[op].name, nres);
	ir_ref r = IR_NONE;
	if (ir_ops[op].kind == IR_K_SOURCE) {
		if ((rc = parse_source(P, (ir_op)op, &optok, &r)))
			return rc;
		return name_node(P, r, &res[0], &optok);
	}
	if ((rc = next(P)) || (rc = expect(P, SIR_LPAREN, "'(' after the op name")))
		return rc;
	size_t nin = 0;
	while (TOK->kind != SIR_RPAREN) {
		if (nin && (rc = expect(P, SIR_COMMA, "',' or ')'")))
			return rc;
		if (TOK->kind != SIR_LOCAL)
			return expected(P, "an operand");
		ir_ref in = lookup(P, TOK->s, TOK->n);
		if (in == IR_NONE)
			return sir_diag_at(&P->L, TOK, "undefined value %%%.*s", (int)TOK->n, TOK->s);
		if ((rc = push_operand(P, nin++, in)) || (rc = next(P)))
			return rc;
	}
	if ((rc = next(P)))
		return rc;
	ir_attrs a;
	uint64_t seen;
	sir_tok at[IR_NATTRS];
	ir_attrs_init((ir_op)op, &a);
	if ((rc = parse_attrs(P, (ir_op)op, &optok, &a, &seen, at)))
		return rc;
	if (op == IR_OP_split) {
		if ((seen & IR_A(index)) && nres > 1)
			return sir_diag_at(&P->L, &at[IR_ATTR_index],
					   "split: index is implied by the %u results", nres);
		if (!(seen & IR_A(index)) && nres != (uint32_t)a.sizes.n)
			return sir_diag_at(&P->L, &optok, "split: %u result%s for %d sizes", nres,
					   nres == 1 ? "" : "s", a.sizes.n);
	}
	for (uint32_t i = 0; i < nres; i++) {
		sn_err be = {0};
		if (nres > 1)
			a.index = i;
		r = ir_add(P->g, (ir_op)op, P->ops, (uint32_t)nin, &a, &be);
		if (r == IR_NONE)
			return builder_error(P, &optok, &be);
		if ((rc = built(P, r, &optok)))
			return rc;
		if ((rc = name_node(P, r, &res[i], &optok)))
			return rc;
	}
	return SN_OK;
}

/* 'return' value {',' value} '}' */
static int parse_return(parser *P)
{
	int rc;
	sir_tok rtok = *TOK;
	if ((rc = next(P)))
		return rc;
	uint32_t n = 0;
	for (;;) {
		if (TOK->kind != SIR_LOCAL)
			return expected(P, "a value to return");
		ir_ref r = lookup(P, TOK->s, TOK->n);
		if (r == IR_NONE)
			return sir_diag_at(&P->L, TOK, "undefined value %%%.*s", (int)TOK->n, TOK->s);
		if (n < P->nres) {
			const ir_node *nd = &P->g->nodes[r];
			if (nd->dtype != P->rtypes[n] || !ir_shape_eq(&nd->shape, &P->rshapes[n])) {
				char got[160], want[160];
				ir_type_str(P->g, nd->dtype, &nd->shape, got, sizeof got);
				ir_type_str(P->g, P->rtypes[n], &P->rshapes[n], want, sizeof want);
				return sir_diag_at(&P->L, TOK, "return: %%%.*s is %s but result %u is declared %s",
						   (int)TOK->n, TOK->s, got, n + 1, want);
			}
		}
		if (ir_add_output(P->g, r) != SN_OK)
			return oom(P);
		n++;
		if ((rc = next(P)))
			return rc;
		if (TOK->kind != SIR_COMMA)
			break;
		if ((rc = next(P)))
			return rc;
	}
	if (n != P->nres)
		return sir_diag_at(&P->L, &rtok, "return: %u value%s but the function declares %u result%s",
				   n, n == 1 ? "" : "s", P->nres, P->nres == 1 ? "" : "s");
	/* the states' new values follow the results (ir.h, nstates) */
	for (uint32_t k = 0; k < P->g->nstates; k++) {
		if (P->upd[k] == IR_NONE)
			return sir_diag_at(&P->L, &P->updtok[k], "state %%%.*s is never updated (write 'update %%%.*s = "
				"%%VALUE' before return)", (int)P->updtok[k].n, P->updtok[k].s, (int)P->updtok[k].n,
				P->updtok[k].s);
		if (ir_add_output(P->g, P->upd[k]) != SN_OK)
			return oom(P);
	}
	return expect(P, SIR_RBRACE, "'}' after return");
}

/* 'update' %state '=' %value: the state's value for the next run */
static int parse_update(parser *P)
{
	int rc;
	if ((rc = next(P)))
		return rc;
	if (TOK->kind != SIR_LOCAL)
		return expected(P, "the state to update");
	sir_tok stok = *TOK;
	ir_ref sr = lookup(P, TOK->s, TOK->n);
	if (sr == IR_NONE)
		return sir_diag_at(&P->L, TOK, "undefined value %%%.*s", (int)TOK->n, TOK->s);
	uint32_t first = P->g->ninputs - P->g->nstates, k = 0;
	while (k < P->g->nstates && P->g->inputs[first + k] != sr)
		k++;
	if (k == P->g->nstates)
		return sir_diag_at(&P->L, TOK, "update: %%%.*s is not a state (declare it in the signature as "
			"'state %%%.*s: TYPE')", (int)TOK->n, TOK->s, (int)TOK->n, TOK->s);
	if (P->upd[k] != IR_NONE)
		return sir_diag_at(&P->L, TOK, "update: state %%%.*s is updated twice", (int)TOK->n, TOK->s);
	if ((rc = next(P)) || (rc = expect(P, SIR_EQ, "'=' after the state")))
		return rc;
	if (TOK->kind != SIR_LOCAL)
		return expected(P, "the state's new value");
	ir_ref v = lookup(P, TOK->s, TOK->n);
	if (v == IR_NONE)
		return sir_diag_at(&P->L, TOK, "undefined value %%%.*s", (int)TOK->n, TOK->s);
	if (v == sr)
		return sir_diag_at(&P->L, TOK, "update: state %%%.*s is updated with itself", (int)TOK->n, TOK->s);
	const ir_node *sn = &P->g->nodes[sr], *vn = &P->g->nodes[v];
	if (sn->dtype != vn->dtype || !ir_shape_eq(&sn->shape, &vn->shape)) {
		char got[160], want[160];
		ir_type_str(P->g, vn->dtype, &vn->shape, got, sizeof got);
		ir_type_str(P->g, sn->dtype, &sn->shape, want, sizeof want);
		return sir_diag_at(&P->L, TOK, "update: %%%.*s is %s but state %%%.*s is %s", (int)TOK->n, TOK->s,
				   got, (int)stok.n, stok.s, want);
	}
	P->upd[k] = v;
	return next(P);
}

/* func @name '(' [%in ':' type {',' ...}] ')' '->' ('(' type {',' type} ')' | type) '{' body '}' */
static int parse_func(parser *P)
{
	int rc;
	if (!sir_tok_is(TOK, "func"))
		return expected(P, "'func'");
	if ((rc = next(P)))
		return rc;
	if (TOK->kind != SIR_GLOBAL)
		return expected(P, "a function name such as @main");
	if (!(P->g->func = sn_strndup(P->g->arena, TOK->s, TOK->n)))
		return oom(P);
	sir_tok ftok = *TOK;
	if ((rc = next(P)) || (rc = expect(P, SIR_LPAREN, "'(' after the function name")))
		return rc;
	while (TOK->kind != SIR_RPAREN) {
		if (P->g->ninputs && (rc = expect(P, SIR_COMMA, "',' or ')'")))
			return rc;
		bool state = sir_tok_is(TOK, "state");
		if (state && (rc = next(P)))
			return rc;
		if (TOK->kind != SIR_LOCAL)
			return expected(P, state ? "the state's name, as in state %cache: f32[1,64]"
						 : "an input such as %x: f32[N,3]");
		if (!state && P->g->nstates)
			return sir_diag_at(&P->L, TOK, "input %%%.*s follows a state (states come last)", (int)TOK->n,
					   TOK->s);
		sir_tok ntok = *TOK;
		if ((rc = check_new_name(P, TOK)) || (rc = next(P)) ||
		    (rc = expect(P, SIR_COLON, "':' after the input's name")))
			return rc;
		ir_dtype t;
		ir_shape s;
		if ((rc = parse_type(P, &t, &s)))
			return rc;
		char *name = sn_strndup(P->g->arena, ntok.s, ntok.n);
		if (!name)
			return oom(P);
		sn_err be = {0};
		ir_ref r = ir_add_input(P->g, name, t, &s, &be);
		if (r == IR_NONE)
			return builder_error(P, &ntok, &be);
		if ((rc = built(P, r, &ntok)))
			return rc;
		if ((rc = name_node(P, r, &ntok, &ntok)))
			return rc;
		if (state) {
			uint32_t k = P->g->nstates;
			ir_ref *u = realloc(P->upd, (k + 1) * sizeof *u);
			if (u)
				P->upd = u;
			sir_tok *ut = realloc(P->updtok, (k + 1) * sizeof *ut);
			if (ut)
				P->updtok = ut;
			if (!u || !ut)
				return oom(P);
			P->upd[k] = IR_NONE;
			P->updtok[k] = ntok;
			P->g->nstates++;
		}
	}
	if ((rc = next(P)) || (rc = expect(P, SIR_ARROW, "'->' and the result types")))
		return rc;
	bool paren = TOK->kind == SIR_LPAREN;
	if (paren && (rc = next(P)))
		return rc;
	for (;;) {
		ir_dtype *t = realloc(P->rtypes, (P->nres + 1) * sizeof *t);
		if (t)
			P->rtypes = t;
		ir_shape *s = realloc(P->rshapes, (P->nres + 1) * sizeof *s);
		if (s)
			P->rshapes = s;
		if (!t || !s)
			return oom(P);
		if ((rc = parse_type(P, &P->rtypes[P->nres], &P->rshapes[P->nres])))
			return rc;
		P->nres++;
		if (!paren || TOK->kind != SIR_COMMA)
			break;
		if ((rc = next(P)))
			return rc;
	}
	if (paren && (rc = expect(P, SIR_RPAREN, "',' or ')' after the result types")))
		return rc;
	if ((rc = expect(P, SIR_LBRACE, "'{'")))
		return rc;
	for (;;) {
		if (sir_tok_is(TOK, "return"))
			return parse_return(P);
		if (sir_tok_is(TOK, "update")) {
			if ((rc = parse_update(P)))
				return rc;
			continue;
		}
		if (TOK->kind == SIR_RBRACE)
			return sir_diag_at(&P->L, TOK, "function @%.*s has no return", (int)ftok.n, ftok.s);
		if (TOK->kind == SIR_EOF)
			return sir_diag_at(&P->L, TOK, "end of file inside function @%.*s ('}' is missing)",
					   (int)ftok.n, ftok.s);
		if (TOK->kind != SIR_LOCAL)
			return expected(P, "a statement or 'return'");
		if ((rc = parse_stmt(P)))
			return rc;
	}
}

/* 'sinter' 1 ['weights' string] func EOF */
static int parse_file(parser *P)
{
	int rc;
	if ((rc = next(P)))
		return rc;
	if (TOK->kind == SIR_EOF)
		return sir_diag_at(&P->L, TOK, "empty file (expected 'sinter 1')");
	if (!sir_tok_is(TOK, "sinter"))
		return expected(P, "'sinter 1' at the start of the file");
	if ((rc = next(P)))
		return rc;
	if (TOK->kind != SIR_INT)
		return expected(P, "a version number after 'sinter'");
	if (TOK->overflow || TOK->ival != 1)
		return sir_diag_at(&P->L, TOK, "unsupported version %.*s (this sinter reads version 1)",
				   (int)TOK->n, TOK->s);
	if ((rc = next(P)))
		return rc;
	if (sir_tok_is(TOK, "weights")) {
		if ((rc = next(P)))
			return rc;
		if (TOK->kind != SIR_STRING)
			return expected(P, "the weights file as a string");
		if (TOK->n == 0)
			return sir_diag_at(&P->L, TOK, "the weights file name is empty");
		if (!(P->g->weights = tok_string(P)))
			return oom(P);
		if ((rc = next(P)))
			return rc;
	}
	if ((rc = parse_func(P)))
		return rc;
	if (TOK->kind != SIR_EOF)
		return sir_diag_at(&P->L, TOK, "text after the end of the function");
	return SN_OK;
}

int sir_parse(const char *src, size_t len, const char *path, const sir_bind *binds,
	      size_t nbinds, ir_graph **out, sn_err *e)
{
	*out = NULL;
	const char *file = path ? path : "<input>";
	for (size_t i = 0; i < nbinds; i++) {
		if (binds[i].value < 0)
			return sn_errf(e, SN_EUSAGE, "symbol %s is bound to %" PRId64 ", a negative size",
				       binds[i].name, binds[i].value);
		for (size_t j = 0; j < i; j++)
			if (strcmp(binds[i].name, binds[j].name) == 0)
				return sn_errf(e, SN_EUSAGE, "symbol %s is bound twice", binds[i].name);
	}
	parser P0 = {0}, *P = &P0;
	sn_err local = {0};
	if (!e)
		e = &local;
	P->e = e;
	P->binds = binds;
	P->nbinds = nbinds;
	P->g = ir_graph_new();
	P->bind_used = calloc(nbinds + 1, sizeof *P->bind_used);
	int rc;
	if (!P->g || !P->bind_used) {
		rc = oom(P);
		goto done;
	}
	if (path && !(P->g->path = sn_strdup(P->g->arena, path))) {
		rc = oom(P);
		goto done;
	}
	sir_lex_init(&P->L, src, len, file, e);
	rc = parse_file(P);
	for (size_t i = 0; rc == SN_OK && i < nbinds; i++)
		if (!P->bind_used[i])
			rc = sn_errf(e, SN_EUSAGE, "symbol %s is bound but %s has no symbol %s",
				     binds[i].name, file, binds[i].name);
done:
	if (rc == SN_OK && e->code != SN_OK)
		rc = e->code; /* an error the lexer set on the way */
	if (rc == SN_OK)
		*out = P->g;
	else
		ir_graph_free(P->g);
	free(P->bind_used);
	free(P->names);
	free(P->ops);
	free(P->bytes);
	free(P->rtypes);
	free(P->rshapes);
	free(P->upd);
	free(P->updtok);
	return rc;
}

int sir_parse_file(const char *path, const sir_bind *binds, size_t nbinds, ir_graph **out,
		   sn_err *e)
{
	*out = NULL;
	void *buf;
	size_t len;
	int rc = sn_read_file(path, 0, SIR_MAX_FILE, NULL, &buf, &len, e);
	if (rc)
		return rc;
	rc = sir_parse(buf, len, path, binds, nbinds, out, e);
	free(buf);
	return rc;
}
