/*
 * One pass over the protobuf wire format of a TF profiler trace (XSpace), into column buffers.
 *
 * Why C: a trace of a few seconds holds millions of events; building a protobuf object per
 * event and reading it back from Python costs several times the parse itself. This walks the
 * bytes once (XSpace > XPlane > XLine > XEvent > XStat), appends one row per line, event and
 * stat to growable column buffers, and hands the buffers to Python without copying them (a
 * small `Column` type exports each buffer through the buffer protocol; numpy wraps it).
 *
 * The small per-plane maps (event and stat metadata) are left to the protobuf runtime:
 * `scan()` returns the byte ranges of every field that is not `planes` (in XSpace) or not
 * `lines` (in XPlane), so Python can join them and parse them with real message classes.
 *
 * Some event stats are read by every analysis (the flow ids `_p`, `_c`, ...): scattering them
 * from the stats table into per-event columns afterwards costs, in numpy, about as much as this
 * whole pass. So `decode()` can also fill per-event columns for chosen stats as it goes
 * ("promoted" stats): the caller gives, per plane, the stat metadata ids that map to each
 * column, and each event gets the integer value of its last stat with such an id. A caller
 * that needs no other stat can also skip the stats table, the largest output (~45 bytes per
 * stat, memory that costs more to fault in than the pass spends decoding it).
 *
 * Input is untrusted: every varint, length and nested length is checked against the end of
 * its enclosing message; unknown fields are skipped by wire type; groups, invalid wire types
 * and known fields with the wrong wire type are errors. The pass runs without the GIL (the
 * input stays pinned through its Py_buffer) and reports errors as WireError(message, offset).
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Bumped when the Python side must change with this file (a stale build is then ignored). */
#define WIRE_ABI 2

#if defined(__GNUC__)
#define PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define PRINTF_LIKE(f, a)
#define LIKELY(x) (x)
#define UNLIKELY(x) (x)
#endif

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_SGROUP = 3, WT_EGROUP = 4, WT_I32 = 5 };

/* Stat kinds, as exposed to Python (0 = no value field present). */
enum { K_UNSET = 0, K_DOUBLE = 1, K_UINT64 = 2, K_INT64 = 3, K_STR = 4, K_BYTES = 5, K_REF = 6 };

static PyObject *WireError; /* ValueError subclass, args (message, offset) */

/* ------------------------------------------------------------------------------------------ */
/* Decoding context and errors                                                                  */

typedef struct {
    const uint8_t *base; /* start of the whole input: offsets in errors and outputs are from here */
    int failed;          /* 0 ok, 1 malformed input, 2 out of memory */
    Py_ssize_t offset;   /* byte offset of the malformed item */
    char msg[240];
} Ctx;

static int PRINTF_LIKE(3, 4) fail(Ctx *c, const uint8_t *at, const char *fmt, ...)
{
    if (!c->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->msg, sizeof c->msg, fmt, ap);
        va_end(ap);
        c->failed = 1;
        c->offset = (Py_ssize_t)(at - c->base);
    }
    return -1;
}

static int fail_nomem(Ctx *c)
{
    if (!c->failed) {
        c->failed = 2;
    }
    return -1;
}

static Py_ssize_t off(const Ctx *c, const uint8_t *p) { return (Py_ssize_t)(p - c->base); }

static const char *wire_type_name(int wt)
{
    switch (wt) {
    case WT_VARINT: return "varint";
    case WT_I64: return "fixed64";
    case WT_LEN: return "length-delimited";
    case WT_SGROUP: return "start-group";
    case WT_EGROUP: return "end-group";
    case WT_I32: return "fixed32";
    default: return "invalid";
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Wire primitives: each reads at *pp, never past `end`, and advances *pp                        */

static int read_varint_slow(Ctx *c, const uint8_t **pp, const uint8_t *end, uint64_t *out)
{
    const uint8_t *p = *pp;
    uint64_t v = 0;
    for (int i = 0; i < 10; i++) {
        if (p >= end) {
            return fail(c, *pp, "truncated varint");
        }
        uint8_t b = *p++;
        v |= (uint64_t)(b & 0x7f) << (7 * i); /* bits past 64 drop out, as in protobuf */
        if (!(b & 0x80)) {
            *out = v;
            *pp = p;
            return 0;
        }
    }
    return fail(c, *pp, "varint longer than 10 bytes");
}

static inline int read_varint(Ctx *c, const uint8_t **pp, const uint8_t *end, uint64_t *out)
{
    const uint8_t *p = *pp;
    if (LIKELY(p < end && *p < 0x80)) {
        *out = *p;
        *pp = p + 1;
        return 0;
    }
    return read_varint_slow(c, pp, end, out);
}

static inline int read_tag(Ctx *c, const uint8_t **pp, const uint8_t *end, const char *msg,
                           uint32_t *field, int *wt)
{
    const uint8_t *at = *pp;
    uint64_t tag;
    if (read_varint(c, pp, end, &tag)) {
        return -1;
    }
    if (UNLIKELY(tag > UINT32_MAX)) {
        return fail(c, at, "%s: field tag %llu out of range", msg, (unsigned long long)tag);
    }
    *field = (uint32_t)(tag >> 3);
    *wt = (int)(tag & 7);
    if (UNLIKELY(*field == 0)) {
        return fail(c, at, "%s: field number 0 is invalid", msg);
    }
    return 0;
}

/* The body of a length-delimited field: [*pp, *body_end), checked against the enclosing end. */
static inline int read_len(Ctx *c, const uint8_t **pp, const uint8_t *end, const char *what,
                           const uint8_t **body_end)
{
    const uint8_t *at = *pp;
    uint64_t n;
    if (read_varint(c, pp, end, &n)) {
        return -1;
    }
    if (UNLIKELY(n > (uint64_t)(end - *pp))) {
        return fail(c, at,
                    "%s: length %llu runs past the end of the enclosing message (%zd bytes left "
                    "before byte %zd)",
                    what, (unsigned long long)n, (Py_ssize_t)(end - *pp), off(c, end));
    }
    *body_end = *pp + n;
    return 0;
}

static inline int skip_fixed(Ctx *c, const uint8_t **pp, const uint8_t *end, const char *what,
                             Py_ssize_t size)
{
    if (UNLIKELY(end - *pp < size)) {
        return fail(c, *pp, "%s: truncated fixed%d value", what, (int)(size * 8));
    }
    *pp += size;
    return 0;
}

static int skip_field(Ctx *c, const uint8_t **pp, const uint8_t *end, const char *msg,
                      uint32_t field, int wt, const uint8_t *tag_at)
{
    uint64_t ignored;
    const uint8_t *body_end = NULL;
    switch (wt) {
    case WT_VARINT: return read_varint(c, pp, end, &ignored);
    case WT_I64: return skip_fixed(c, pp, end, msg, 8);
    case WT_I32: return skip_fixed(c, pp, end, msg, 4);
    case WT_LEN:
        if (read_len(c, pp, end, msg, &body_end)) {
            return -1;
        }
        *pp = body_end;
        return 0;
    case WT_SGROUP:
    case WT_EGROUP:
        return fail(c, tag_at, "%s: field %u uses the %s wire type (groups are not supported)",
                    msg, field, wire_type_name(wt));
    default:
        return fail(c, tag_at, "%s: field %u has invalid wire type %d", msg, field, wt);
    }
}

static int bad_wire_type(Ctx *c, const uint8_t *tag_at, const char *msg, const char *field,
                         int wt, int expected)
{
    return fail(c, tag_at, "%s.%s has wire type %d (%s), expected %d (%s)", msg, field, wt,
                wire_type_name(wt), expected, wire_type_name(expected));
}

#define EXPECT_WT(msg, name, expected)                                                        \
    do {                                                                                      \
        if (UNLIKELY(wt != (expected))) {                                                     \
            return bad_wire_type(c, tag_at, (msg), (name), wt, (expected));                   \
        }                                                                                     \
    } while (0)

/* Strict UTF-8 (no overlongs, no surrogates, nothing above U+10FFFF), as protobuf requires of
 * proto3 `string` fields: a trace the protobuf runtime rejects is rejected here too. */
static int utf8_valid(const uint8_t *s, Py_ssize_t n)
{
    Py_ssize_t i = 0;
    while (i < n) {
        if (n - i >= 8) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (!(w & 0x8080808080808080ULL)) {
                i += 8;
                continue;
            }
        }
        uint8_t b = s[i];
        if (b < 0x80) {
            i++;
            continue;
        }
        int more;
        uint8_t lo = 0x80, hi = 0xBF; /* allowed range of the first continuation byte */
        if (b >= 0xC2 && b <= 0xDF) {
            more = 1;
        } else if (b == 0xE0) {
            more = 2;
            lo = 0xA0;
        } else if ((b >= 0xE1 && b <= 0xEC) || b == 0xEE || b == 0xEF) {
            more = 2;
        } else if (b == 0xED) {
            more = 2;
            hi = 0x9F;
        } else if (b == 0xF0) {
            more = 3;
            lo = 0x90;
        } else if (b >= 0xF1 && b <= 0xF3) {
            more = 3;
        } else if (b == 0xF4) {
            more = 3;
            hi = 0x8F;
        } else {
            return 0;
        }
        if (n - i <= more) {
            return 0;
        }
        if (s[i + 1] < lo || s[i + 1] > hi) {
            return 0;
        }
        for (int k = 2; k <= more; k++) {
            if ((s[i + k] & 0xC0) != 0x80) {
                return 0;
            }
        }
        i += more + 1;
    }
    return 1;
}

/* ------------------------------------------------------------------------------------------ */
/* Column tables: one malloc'ed buffer per column, all grown together                          */

typedef struct {
    const char *name; /* NULL in the promoted table: its columns are returned as a list */
    int size;         /* bytes per row */
} ColSpec;

typedef struct {
    int ncols;
    const ColSpec *spec;
    Py_ssize_t n, cap; /* rows used, rows allocated */
    char **col;        /* ncols buffers */
} Table;

/* Column order and widths; the names are the keys of the dicts decode() returns. */
enum {
    L_PLANE, L_ID, L_DISPLAY_ID, L_TIMESTAMP, L_DURATION, L_N_EVENTS, L_FIRST_EVENT,
    L_NAME_START, L_NAME_LEN, L_DNAME_START, L_DNAME_LEN, L_NCOLS
};
static const ColSpec LINE_COLS[L_NCOLS] = {
    {"plane", 4},       {"id", 8},          {"display_id", 8},
    {"timestamp_ns", 8}, {"duration_ps", 8}, {"n_events", 8},
    {"first_event", 8}, {"name_start", 8},  {"name_len", 8},
    {"display_name_start", 8}, {"display_name_len", 8},
};

enum {
    E_LINE, E_METADATA_ID, E_OFFSET, E_DURATION, E_OCCURRENCES, E_FIRST_STAT, E_N_STATS, E_NCOLS
};
static const ColSpec EVENT_COLS[E_NCOLS] = {
    {"line", 4},        {"metadata_id", 8},     {"offset_ps", 8}, {"duration_ps", 8},
    {"num_occurrences", 8}, {"first_stat", 8}, {"n_stats", 4},
};

enum { S_EVENT, S_METADATA_ID, S_KIND, S_INT, S_DOUBLE, S_STR_START, S_STR_LEN, S_NCOLS };
static const ColSpec STAT_COLS[S_NCOLS] = {
    {"event", 8},        {"metadata_id", 8}, {"kind", 1},    {"int_value", 8},
    {"double_value", 8}, {"str_start", 8},   {"str_len", 4},
};

#define COL(t, k, type) ((type *)(t)->col[k])

/* An empty table; -1 when out of memory. table_free() is safe on it either way. */
static int table_init(Table *t, const ColSpec *spec, int ncols)
{
    memset(t, 0, sizeof *t);
    t->spec = spec;
    t->ncols = ncols;
    t->col = PyMem_RawCalloc((size_t)(ncols ? ncols : 1), sizeof(char *));
    return t->col == NULL ? -1 : 0;
}

/* Frees the buffers still owned (table_to_dict() takes the others); idempotent. */
static void table_free(Table *t)
{
    if (t->col != NULL) {
        for (int k = 0; k < t->ncols; k++) {
            PyMem_RawFree(t->col[k]);
        }
        PyMem_RawFree(t->col);
    }
    t->col = NULL;
    t->ncols = 0;
    t->n = t->cap = 0;
}

/* Make room for one more row. Doubling keeps appends amortised O(1) (and glibc grows large
 * blocks with mremap, without copying). On failure the columns already grown keep their larger
 * blocks and `cap` stays at the old, still valid, value. */
static int table_reserve(Ctx *c, Table *t)
{
    if (LIKELY(t->n < t->cap)) {
        return 0;
    }
    Py_ssize_t cap = t->cap ? t->cap : 512;
    if (t->cap) {
        if (cap > PY_SSIZE_T_MAX / 16) {
            return fail_nomem(c);
        }
        cap *= 2;
    }
    for (int k = 0; k < t->ncols; k++) {
        void *p = PyMem_RawRealloc(t->col[k], (size_t)cap * (size_t)t->spec[k].size);
        if (p == NULL) {
            return fail_nomem(c);
        }
        t->col[k] = p;
    }
    t->cap = cap;
    return 0;
}

/* A stat metadata id whose stats fill promoted column `col`. */
typedef struct {
    int64_t id;
    int32_t col;
} PromoKey;

typedef struct {
    Table lines, events, stats;
    /* Promoted stats: k int64 value columns, then k uint8 present columns, one row per event
     * (promo.n == events.n between events). k = promo.ncols / 2; 0 when none were asked. */
    Table promo;
    ColSpec *promo_spec;
    Py_ssize_t k;
    const PromoKey *keys; /* the current plane's, strictly increasing ids */
    Py_ssize_t nkeys;
    int keep_stats; /* 0: stats are parsed (and checked) but not stored; n_stats is then 0 */
} Tables;

/* ------------------------------------------------------------------------------------------ */
/* Messages                                                                                    */

typedef struct {
    int64_t metadata_id, int_value, str_start;
    double double_value;
    int32_t str_len;
    uint8_t kind;
} Stat;

/* A oneof: the last value field on the wire wins and clears the others. */
static inline void stat_set_kind(Stat *s, uint8_t kind)
{
    s->kind = kind;
    s->int_value = 0;
    s->double_value = 0.0;
    s->str_start = 0;
    s->str_len = 0;
}

static inline uint64_t load_le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) {
        v = (v << 8) | p[i];
    }
    return v;
}

static int stat_bytes_field(Ctx *c, const uint8_t **pp, const uint8_t *end, Stat *s,
                            uint8_t kind)
{
    const uint8_t *body_end = NULL;
    if (read_len(c, pp, end, kind == K_STR ? "XStat.str_value" : "XStat.bytes_value",
                 &body_end)) {
        return -1;
    }
    Py_ssize_t n = body_end - *pp;
    if (UNLIKELY(n > INT32_MAX)) {
        return fail(c, *pp, "XStat: value of %zd bytes is too long", n);
    }
    if (kind == K_STR && !utf8_valid(*pp, n)) {
        return fail(c, *pp, "XStat.str_value is not valid UTF-8");
    }
    stat_set_kind(s, kind);
    s->str_start = off(c, *pp);
    s->str_len = (int32_t)n;
    *pp = body_end;
    return 0;
}

static int parse_stat(Ctx *c, const uint8_t *p, const uint8_t *end, Stat *s)
{
    static const char M[] = "XStat";
    memset(s, 0, sizeof *s);
    while (p < end) {
        const uint8_t *tag_at = p;
        uint32_t field = 0;
        int wt = 0;
        uint64_t v;
        if (read_tag(c, &p, end, M, &field, &wt)) {
            return -1;
        }
        switch (field) {
        case 1:
            EXPECT_WT(M, "metadata_id", WT_VARINT);
            if (read_varint(c, &p, end, &v)) {
                return -1;
            }
            s->metadata_id = (int64_t)v;
            break;
        case 2: {
            EXPECT_WT(M, "double_value", WT_I64);
            if (UNLIKELY(end - p < 8)) {
                return fail(c, p, "XStat.double_value: truncated fixed64 value");
            }
            uint64_t bits = load_le64(p);
            stat_set_kind(s, K_DOUBLE);
            memcpy(&s->double_value, &bits, 8);
            p += 8;
            break;
        }
        case 3:
        case 4:
        case 7:
            if (UNLIKELY(wt != WT_VARINT)) {
                const char *name = field == 3 ? "uint64_value" : field == 4 ? "int64_value"
                                                                            : "ref_value";
                return bad_wire_type(c, tag_at, M, name, wt, WT_VARINT);
            }
            if (read_varint(c, &p, end, &v)) {
                return -1;
            }
            stat_set_kind(s, field == 3 ? K_UINT64 : field == 4 ? K_INT64 : K_REF);
            s->int_value = (int64_t)v;
            break;
        case 5:
            EXPECT_WT(M, "str_value", WT_LEN);
            if (stat_bytes_field(c, &p, end, s, K_STR)) {
                return -1;
            }
            break;
        case 6:
            EXPECT_WT(M, "bytes_value", WT_LEN);
            if (stat_bytes_field(c, &p, end, s, K_BYTES)) {
                return -1;
            }
            break;
        default:
            if (skip_field(c, &p, end, M, field, wt, tag_at)) {
                return -1;
            }
        }
    }
    return 0;
}

static int append_stat(Ctx *c, Tables *t, int64_t event_row, const Stat *s)
{
    Table *st = &t->stats;
    if (table_reserve(c, st)) {
        return -1;
    }
    Py_ssize_t i = st->n++;
    COL(st, S_EVENT, int64_t)[i] = event_row;
    COL(st, S_METADATA_ID, int64_t)[i] = s->metadata_id;
    COL(st, S_KIND, uint8_t)[i] = s->kind;
    COL(st, S_INT, int64_t)[i] = s->int_value;
    COL(st, S_DOUBLE, double)[i] = s->double_value;
    COL(st, S_STR_START, int64_t)[i] = s->str_start;
    COL(st, S_STR_LEN, int32_t)[i] = s->str_len;
    return 0;
}

/* Opens the promoted row of the event being parsed: every column absent (value 0). */
static int promo_begin(Ctx *c, Tables *t, Py_ssize_t row)
{
    Table *pr = &t->promo;
    if (table_reserve(c, pr)) {
        return -1;
    }
    for (Py_ssize_t j = 0; j < t->k; j++) {
        COL(pr, j, int64_t)[row] = 0;
        COL(pr, t->k + j, uint8_t)[row] = 0;
    }
    return 0;
}

/* The promoted column of a stat metadata id in the current plane, or -1. */
static inline Py_ssize_t promo_column(const Tables *t, int64_t id)
{
    const PromoKey *keys = t->keys;
    Py_ssize_t lo = 0, hi = t->nkeys;
    if (hi == 0 || id < keys[0].id || id > keys[hi - 1].id) {
        return -1;
    }
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (keys[mid].id < id) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo < t->nkeys && keys[lo].id == id ? keys[lo].col : -1;
}

/* A stat of event `row` with a promoted id: the last one wins, as when protobuf merges a
 * field; a value that is not an integer (or no value) leaves the column absent. */
static inline void promo_stat(Tables *t, Py_ssize_t row, const Stat *s)
{
    Py_ssize_t j = promo_column(t, s->metadata_id);
    if (j < 0) {
        return;
    }
    int is_int = s->kind == K_INT64 || s->kind == K_UINT64 || s->kind == K_REF;
    COL(&t->promo, j, int64_t)[row] = is_int ? s->int_value : 0;
    COL(&t->promo, t->k + j, uint8_t)[row] = (uint8_t)is_int;
}

static int parse_event(Ctx *c, Tables *t, const uint8_t *p, const uint8_t *end, int32_t line_row)
{
    static const char M[] = "XEvent";
    int64_t metadata_id = 0, offset_ps = 0, duration_ps = 0, occurrences = 0;
    int64_t event_row = t->events.n;
    Py_ssize_t first_stat = t->stats.n;
    if (t->k && promo_begin(c, t, event_row)) {
        return -1;
    }
    while (p < end) {
        const uint8_t *tag_at = p;
        uint32_t field = 0;
        int wt = 0;
        uint64_t v;
        if (read_tag(c, &p, end, M, &field, &wt)) {
            return -1;
        }
        switch (field) {
        case 1:
            EXPECT_WT(M, "metadata_id", WT_VARINT);
            if (read_varint(c, &p, end, &v)) {
                return -1;
            }
            metadata_id = (int64_t)v;
            break;
        case 2: /* oneof data { offset_ps, num_occurrences } */
            EXPECT_WT(M, "offset_ps", WT_VARINT);
            if (read_varint(c, &p, end, &v)) {
                return -1;
            }
            offset_ps = (int64_t)v;
            occurrences = 0;
            break;
        case 3:
            EXPECT_WT(M, "duration_ps", WT_VARINT);
            if (read_varint(c, &p, end, &v)) {
                return -1;
            }
            duration_ps = (int64_t)v;
            break;
        case 4: {
            EXPECT_WT(M, "stats", WT_LEN);
            const uint8_t *body_end = NULL;
            Stat s;
            if (read_len(c, &p, end, "XEvent.stats", &body_end) ||
                parse_stat(c, p, body_end, &s) ||
                (t->keep_stats && append_stat(c, t, event_row, &s))) {
                return -1;
            }
            if (t->nkeys) {
                promo_stat(t, event_row, &s);
            }
            p = body_end;
            break;
        }
        case 5:
            EXPECT_WT(M, "num_occurrences", WT_VARINT);
            if (read_varint(c, &p, end, &v)) {
                return -1;
            }
            occurrences = (int64_t)v;
            offset_ps = 0;
            break;
        default:
            if (skip_field(c, &p, end, M, field, wt, tag_at)) {
                return -1;
            }
        }
    }
    Py_ssize_t n_stats = t->stats.n - first_stat;
    if (UNLIKELY(n_stats > INT32_MAX)) {
        return fail(c, end, "XEvent: more than 2^31 stats");
    }
    Table *ev = &t->events;
    if (table_reserve(c, ev)) {
        return -1;
    }
    Py_ssize_t i = ev->n++;
    COL(ev, E_LINE, int32_t)[i] = line_row;
    COL(ev, E_METADATA_ID, int64_t)[i] = metadata_id;
    COL(ev, E_OFFSET, int64_t)[i] = offset_ps;
    COL(ev, E_DURATION, int64_t)[i] = duration_ps;
    COL(ev, E_OCCURRENCES, int64_t)[i] = occurrences;
    COL(ev, E_FIRST_STAT, int64_t)[i] = first_stat;
    COL(ev, E_N_STATS, int32_t)[i] = (int32_t)n_stats;
    if (t->k) {
        t->promo.n++; /* the row promo_begin() opened */
    }
    return 0;
}

static int parse_line(Ctx *c, Tables *t, const uint8_t *p, const uint8_t *end, int32_t plane)
{
    static const char M[] = "XLine";
    int64_t id = 0, display_id = 0, timestamp_ns = 0, duration_ps = 0;
    int64_t name_start = 0, name_len = 0, dname_start = 0, dname_len = 0;
    Py_ssize_t first_event = t->events.n;
    if (UNLIKELY(t->lines.n >= INT32_MAX)) {
        return fail(c, p, "XPlane: more than 2^31 lines");
    }
    int32_t line_row = (int32_t)t->lines.n;
    while (p < end) {
        const uint8_t *tag_at = p;
        const uint8_t *body_end = NULL;
        uint32_t field = 0;
        int wt = 0;
        uint64_t v;
        if (read_tag(c, &p, end, M, &field, &wt)) {
            return -1;
        }
        switch (field) {
        case 1:
        case 3:
        case 9:
        case 10:
            if (UNLIKELY(wt != WT_VARINT)) {
                const char *name = field == 1 ? "id" : field == 3 ? "timestamp_ns"
                                                   : field == 9   ? "duration_ps"
                                                                  : "display_id";
                return bad_wire_type(c, tag_at, M, name, wt, WT_VARINT);
            }
            if (read_varint(c, &p, end, &v)) {
                return -1;
            }
            *(field == 1 ? &id : field == 3 ? &timestamp_ns : field == 9 ? &duration_ps
                                                                         : &display_id) =
                (int64_t)v;
            break;
        case 2:
        case 11:
            EXPECT_WT(M, field == 2 ? "name" : "display_name", WT_LEN);
            if (read_len(c, &p, end, field == 2 ? "XLine.name" : "XLine.display_name",
                         &body_end)) {
                return -1;
            }
            *(field == 2 ? &name_start : &dname_start) = off(c, p);
            *(field == 2 ? &name_len : &dname_len) = body_end - p;
            p = body_end;
            break;
        case 4:
            EXPECT_WT(M, "events", WT_LEN);
            if (read_len(c, &p, end, "XLine.events", &body_end) ||
                parse_event(c, t, p, body_end, line_row)) {
                return -1;
            }
            p = body_end;
            break;
        default:
            if (skip_field(c, &p, end, M, field, wt, tag_at)) {
                return -1;
            }
        }
    }
    Table *ln = &t->lines;
    if (table_reserve(c, ln)) {
        return -1;
    }
    Py_ssize_t i = ln->n++;
    COL(ln, L_PLANE, int32_t)[i] = plane;
    COL(ln, L_ID, int64_t)[i] = id;
    COL(ln, L_DISPLAY_ID, int64_t)[i] = display_id;
    COL(ln, L_TIMESTAMP, int64_t)[i] = timestamp_ns;
    COL(ln, L_DURATION, int64_t)[i] = duration_ps;
    COL(ln, L_N_EVENTS, int64_t)[i] = t->events.n - first_event;
    COL(ln, L_FIRST_EVENT, int64_t)[i] = first_event;
    COL(ln, L_NAME_START, int64_t)[i] = name_start;
    COL(ln, L_NAME_LEN, int64_t)[i] = name_len;
    COL(ln, L_DNAME_START, int64_t)[i] = dname_start;
    COL(ln, L_DNAME_LEN, int64_t)[i] = dname_len;
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* XSpace and XPlane: walked field by field, only `lines` is decoded here                      */

/* Expected wire type of XSpace fields 1-4 and XPlane fields 1-6 (-1: unknown field). */
static int space_wire_type(uint32_t field) { return field >= 1 && field <= 4 ? WT_LEN : -1; }

static int plane_wire_type(uint32_t field)
{
    return field == 1 ? WT_VARINT : field >= 2 && field <= 6 ? WT_LEN : -1;
}

/* Field names for error messages (NULL: not a field of the schema). */
static const char *space_field_name(uint32_t field)
{
    static const char *names[] = {NULL, "planes", "errors", "warnings", "hostnames"};
    return field <= 4 ? names[field] : NULL;
}

static const char *plane_field_name(uint32_t field)
{
    static const char *names[] = {NULL, "id", "name", "lines", "event_metadata",
                                  "stat_metadata", "stats"};
    return field <= 6 ? names[field] : NULL;
}

/* Reads one field of XSpace or XPlane; for length-delimited fields returns the body. */
typedef struct {
    uint32_t field;
    const uint8_t *start, *body, *body_end; /* start: the tag; body_end: end of the field */
} Field;

static int next_field(Ctx *c, const uint8_t **pp, const uint8_t *end, const char *msg,
                      int (*expected)(uint32_t), const char *(*name)(uint32_t), Field *f)
{
    const uint8_t *tag_at = *pp;
    int wt = 0;
    f->start = tag_at;
    if (read_tag(c, pp, end, msg, &f->field, &wt)) {
        return -1;
    }
    int want = expected(f->field);
    if (want >= 0 && wt != want) {
        return bad_wire_type(c, tag_at, msg, name(f->field), wt, want);
    }
    if (wt == WT_LEN) {
        char what[48];
        const char *known = name(f->field);
        if (known != NULL) {
            snprintf(what, sizeof what, "%s.%s", msg, known);
        } else {
            snprintf(what, sizeof what, "%s field %u", msg, f->field);
        }
        if (read_len(c, pp, end, what, &f->body_end)) {
            return -1;
        }
        f->body = *pp;
        *pp = f->body_end;
        return 0;
    }
    if (skip_field(c, pp, end, msg, f->field, wt, tag_at)) {
        return -1;
    }
    f->body = f->body_end = *pp;
    return 0;
}

static int decode_plane(Ctx *c, Tables *t, const uint8_t *p, const uint8_t *end, int32_t plane)
{
    while (p < end) {
        Field f;
        if (next_field(c, &p, end, "XPlane", plane_wire_type, plane_field_name, &f)) {
            return -1;
        }
        if (f.field == 3 && parse_line(c, t, f.body, f.body_end, plane)) {
            return -1;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Column: a buffer that owns its memory                                                      */

typedef struct {
    PyObject_HEAD
    char *buf;
    Py_ssize_t len;
    int readonly; /* 0 only for promoted stats: their consumer may adopt them without a copy */
} ColumnObject;

static int column_getbuffer(PyObject *self, Py_buffer *view, int flags)
{
    ColumnObject *col = (ColumnObject *)self;
    return PyBuffer_FillInfo(view, self, col->buf, col->len, col->readonly, flags);
}

static void column_dealloc(PyObject *self)
{
    PyMem_RawFree(((ColumnObject *)self)->buf);
    Py_TYPE(self)->tp_free(self);
}

static PyObject *column_repr(PyObject *self)
{
    return PyUnicode_FromFormat("<_wire.Column of %zd bytes>", ((ColumnObject *)self)->len);
}

static PyBufferProcs column_as_buffer = {column_getbuffer, NULL};

static PyTypeObject ColumnType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tftrace.analysis.xplane._wire.Column",
    .tp_basicsize = sizeof(ColumnObject),
    .tp_dealloc = column_dealloc,
    .tp_repr = column_repr,
    .tp_as_buffer = &column_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One decoded column: a buffer, read-only but for promoted stats (wrap it with "
              "numpy.frombuffer).",
};

/* Moves column k's buffer, trimmed to the rows used, into a new Column; NULL (with an
 * exception set) when out of memory. The table no longer owns the buffer either way. */
static PyObject *take_column(Table *t, int k, int readonly)
{
    size_t size = (size_t)t->n * (size_t)t->spec[k].size;
    char *buf = t->col[k];
    t->col[k] = NULL;
    if (buf == NULL || t->n < t->cap) { /* trim; an empty column still gets a pointer */
        char *trimmed = PyMem_RawRealloc(buf, size ? size : 1);
        if (trimmed != NULL) {
            buf = trimmed;
        }
    }
    if (buf == NULL) {
        return PyErr_NoMemory();
    }
    ColumnObject *col = PyObject_New(ColumnObject, &ColumnType);
    if (col == NULL) {
        PyMem_RawFree(buf);
        return NULL;
    }
    col->buf = buf;
    col->len = (Py_ssize_t)size;
    col->readonly = readonly;
    return (PyObject *)col;
}

/* Moves the table's buffers into a {name: Column} dict; the table is left empty either way. */
static PyObject *table_to_dict(Table *t)
{
    PyObject *d = PyDict_New();
    for (int k = 0; k < t->ncols && d != NULL; k++) {
        PyObject *col = take_column(t, k, 1);
        if (col == NULL || PyDict_SetItemString(d, t->spec[k].name, col) < 0) {
            Py_CLEAR(d);
        }
        Py_XDECREF(col);
    }
    table_free(t);
    return d;
}

/* The promoted table as a list of k (values, present) Column pairs, writable; left empty
 * either way. */
static PyObject *promo_to_list(Tables *t)
{
    PyObject *list = PyList_New(t->k);
    for (Py_ssize_t j = 0; j < t->k && list != NULL; j++) {
        PyObject *values = take_column(&t->promo, (int)j, 0);
        PyObject *present = values ? take_column(&t->promo, (int)(t->k + j), 0) : NULL;
        PyObject *pair = present ? PyTuple_Pack(2, values, present) : NULL;
        Py_XDECREF(values);
        Py_XDECREF(present);
        if (pair == NULL) {
            Py_CLEAR(list);
        } else {
            PyList_SET_ITEM(list, j, pair);
        }
    }
    table_free(&t->promo);
    return list;
}

/* ------------------------------------------------------------------------------------------ */
/* Python entry points                                                                         */

static PyObject *raise_ctx(const Ctx *c)
{
    if (c->failed == 2) {
        return PyErr_NoMemory();
    }
    PyObject *exc_args = Py_BuildValue("(sn)", c->msg, c->offset);
    if (exc_args != NULL) {
        PyErr_SetObject(WireError, exc_args);
        Py_DECREF(exc_args);
    }
    return NULL;
}

/* Byte ranges of the fields Python parses itself, adjacent fields merged into one range. */
typedef struct {
    PyObject *list; /* of (start, end) tuples */
    Py_ssize_t start, end; /* the range being extended; start = -1 when none */
} Ranges;

static int ranges_flush(Ranges *r)
{
    if (r->start < 0) {
        return 0;
    }
    PyObject *range = Py_BuildValue("(nn)", r->start, r->end);
    if (range == NULL) {
        return -1;
    }
    int rc = PyList_Append(r->list, range);
    Py_DECREF(range);
    r->start = -1;
    return rc;
}

static int ranges_add(Ranges *r, Py_ssize_t start, Py_ssize_t end)
{
    if (r->start >= 0 && r->end == start) {
        r->end = end;
        return 0;
    }
    if (ranges_flush(r) < 0) {
        return -1;
    }
    r->start = start;
    r->end = end;
    return 0;
}

/* One plane's outline: (start, end, name_start, name_end, rest); name_start = -1 if no name. */
static PyObject *scan_plane(Ctx *c, const uint8_t *p, const uint8_t *end)
{
    Ranges rest = {PyList_New(0), -1, 0};
    Py_ssize_t name_start = -1, name_end = -1;
    Py_ssize_t start = off(c, p), stop = off(c, end);
    if (rest.list == NULL) {
        return NULL;
    }
    while (p < end) {
        Field f;
        if (next_field(c, &p, end, "XPlane", plane_wire_type, plane_field_name, &f)) {
            Py_DECREF(rest.list);
            return raise_ctx(c);
        }
        if (f.field == 2) {
            name_start = off(c, f.body);
            name_end = off(c, f.body_end);
        }
        if (f.field != 3 && ranges_add(&rest, off(c, f.start), off(c, p)) < 0) {
            Py_DECREF(rest.list);
            return NULL;
        }
    }
    if (ranges_flush(&rest) < 0) {
        Py_DECREF(rest.list);
        return NULL;
    }
    return Py_BuildValue("(nnnnN)", start, stop, name_start, name_end, rest.list);
}

static PyObject *scan_space(Ctx *c, const uint8_t *p, const uint8_t *end)
{
    Ranges rest = {PyList_New(0), -1, 0};
    PyObject *planes = PyList_New(0);
    if (rest.list == NULL || planes == NULL) {
        goto error;
    }
    while (p < end) {
        Field f;
        if (next_field(c, &p, end, "XSpace", space_wire_type, space_field_name, &f)) {
            raise_ctx(c);
            goto error;
        }
        if (f.field == 1) {
            PyObject *plane = scan_plane(c, f.body, f.body_end);
            if (plane == NULL) {
                goto error;
            }
            int rc = PyList_Append(planes, plane);
            Py_DECREF(plane);
            if (rc < 0) {
                goto error;
            }
        } else if (ranges_add(&rest, off(c, f.start), off(c, p)) < 0) {
            goto error;
        }
    }
    if (ranges_flush(&rest) < 0) {
        goto error;
    }
    return Py_BuildValue("(NN)", rest.list, planes);
error:
    Py_XDECREF(rest.list);
    Py_XDECREF(planes);
    return NULL;
}

PyDoc_STRVAR(scan_doc,
             "scan(data) -> (rest, planes)\n\n"
             "Outline of an XSpace without decoding its lines. rest: (start, end) byte ranges\n"
             "of the XSpace fields other than `planes`; planes: per plane (start, end,\n"
             "name_start, name_end, rest) where rest lists the ranges of its fields other\n"
             "than `lines` (name_start is -1 when the plane has no name).");

static PyObject *wire_scan(PyObject *module, PyObject *args)
{
    (void)module;
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "y*:scan", &view)) {
        return NULL;
    }
    Ctx c = {.base = view.buf};
    const uint8_t *p = view.buf;
    PyObject *result = scan_space(&c, p, p + view.len);
    PyBuffer_Release(&view);
    return result;
}

/* Reads the (start, end) pairs given to decode(), each inside [0, len]. */
static Py_ssize_t *read_spans(PyObject *spans, Py_ssize_t len, Py_ssize_t *count)
{
    PyObject *seq = PySequence_Fast(spans, "planes must be a sequence of (start, end) pairs");
    if (seq == NULL) {
        return NULL;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    Py_ssize_t *out = PyMem_Malloc(sizeof(Py_ssize_t) * 2 * (size_t)(n ? n : 1));
    if (out == NULL) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 2) {
            PyErr_SetString(PyExc_TypeError, "planes must be a sequence of (start, end) pairs");
            goto error;
        }
        Py_ssize_t start = PyLong_AsSsize_t(PyTuple_GET_ITEM(item, 0));
        Py_ssize_t end = PyLong_AsSsize_t(PyTuple_GET_ITEM(item, 1));
        if ((start == -1 || end == -1) && PyErr_Occurred()) {
            goto error;
        }
        if (start < 0 || start > end || end > len) {
            PyErr_Format(PyExc_ValueError, "plane span (%zd, %zd) outside the data (%zd bytes)",
                         start, end, len);
            goto error;
        }
        out[2 * i] = start;
        out[2 * i + 1] = end;
    }
    if (n > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "too many planes");
        goto error;
    }
    Py_DECREF(seq);
    *count = n;
    return out;
error:
    Py_DECREF(seq);
    PyMem_Free(out);
    return NULL;
}

/* At most this many promoted stats (a bound that keeps the column count an int). */
#define MAX_PROMOTED 4096

/* The promoted stats of every plane, from decode()'s `keys`. */
typedef struct {
    PromoKey *keys;    /* all planes' keys, plane after plane */
    Py_ssize_t *start; /* plane i's keys are keys[start[i]:start[i + 1]] */
} PlaneKeys;

static void plane_keys_free(PlaneKeys *pk)
{
    PyMem_Free(pk->keys);
    PyMem_Free(pk->start);
    pk->keys = NULL;
    pk->start = NULL;
}

/* Appends one plane's (stat metadata id, column) pairs: ids strictly increasing (the C side
 * searches them by bisection), columns in [0, k). */
static int read_plane_keys(PyObject *obj, Py_ssize_t k, PlaneKeys *pk, Py_ssize_t *total)
{
    static const char type_msg[] = "keys must hold, per plane, a sequence of (id, column) pairs";
    PyObject *seq = PySequence_Fast(obj, type_msg);
    if (seq == NULL) {
        return -1;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n >= PY_SSIZE_T_MAX / (Py_ssize_t)sizeof(PromoKey) - *total) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    PromoKey *grown = PyMem_Realloc(pk->keys, sizeof(PromoKey) * (size_t)(*total + n + 1));
    if (grown == NULL) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    pk->keys = grown;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 2) {
            PyErr_SetString(PyExc_TypeError, type_msg);
            goto error;
        }
        long long id = PyLong_AsLongLong(PyTuple_GET_ITEM(item, 0));
        Py_ssize_t col = PyLong_AsSsize_t(PyTuple_GET_ITEM(item, 1));
        if ((id == -1 || col == -1) && PyErr_Occurred()) {
            goto error;
        }
        if (col < 0 || col >= k) {
            PyErr_Format(PyExc_ValueError, "key column %zd outside [0, %zd)", col, k);
            goto error;
        }
        if (i > 0 && id <= pk->keys[*total + i - 1].id) {
            PyErr_SetString(PyExc_ValueError, "key ids of a plane must be strictly increasing");
            goto error;
        }
        pk->keys[*total + i].id = (int64_t)id;
        pk->keys[*total + i].col = (int32_t)col;
    }
    Py_DECREF(seq);
    *total += n;
    return 0;
error:
    Py_DECREF(seq);
    return -1;
}

/* Reads decode()'s `keys`: None (no plane has promoted stats) or one sequence per plane. */
static int read_keys(PyObject *obj, Py_ssize_t nspans, Py_ssize_t k, PlaneKeys *pk)
{
    pk->keys = NULL;
    pk->start = PyMem_Calloc((size_t)nspans + 1, sizeof(Py_ssize_t));
    if (pk->start == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    if (obj == Py_None) {
        return 0;
    }
    PyObject *seq = PySequence_Fast(obj, "keys must be a sequence with one item per plane");
    if (seq == NULL) {
        plane_keys_free(pk);
        return -1;
    }
    if (PySequence_Fast_GET_SIZE(seq) != nspans) {
        PyErr_Format(PyExc_ValueError, "keys has %zd items for %zd planes",
                     PySequence_Fast_GET_SIZE(seq), nspans);
        goto error;
    }
    Py_ssize_t total = 0;
    for (Py_ssize_t i = 0; i < nspans; i++) {
        if (read_plane_keys(PySequence_Fast_GET_ITEM(seq, i), k, pk, &total) < 0) {
            goto error;
        }
        pk->start[i + 1] = total;
    }
    Py_DECREF(seq);
    return 0;
error:
    Py_DECREF(seq);
    plane_keys_free(pk);
    return -1;
}

/* Frees whatever the tables still own (idempotent). */
static void tables_free(Tables *t)
{
    table_free(&t->lines);
    table_free(&t->events);
    table_free(&t->stats);
    table_free(&t->promo);
    PyMem_RawFree(t->promo_spec);
    t->promo_spec = NULL;
}

/* Empty tables with k promoted stats; -1 with MemoryError set. */
static int tables_init(Tables *t, Py_ssize_t k, int keep_stats)
{
    memset(t, 0, sizeof *t);
    t->k = k;
    t->keep_stats = keep_stats;
    t->promo_spec = PyMem_RawMalloc(sizeof(ColSpec) * (size_t)(k ? 2 * k : 1));
    if (t->promo_spec != NULL) {
        for (Py_ssize_t j = 0; j < k; j++) {
            t->promo_spec[j] = (ColSpec){NULL, 8};
            t->promo_spec[k + j] = (ColSpec){NULL, 1};
        }
    }
    if (t->promo_spec == NULL || table_init(&t->lines, LINE_COLS, L_NCOLS) ||
        table_init(&t->events, EVENT_COLS, E_NCOLS) ||
        table_init(&t->stats, STAT_COLS, S_NCOLS) ||
        table_init(&t->promo, t->promo_spec, (int)(2 * k))) {
        tables_free(t);
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

/* The single pass, without the GIL; errors are left in `c`. */
static void decode_planes(Ctx *c, Tables *t, const Py_ssize_t *spans, Py_ssize_t nspans,
                          const PlaneKeys *pk)
{
    for (Py_ssize_t i = 0; i < nspans; i++) {
        t->keys = pk->keys != NULL ? pk->keys + pk->start[i] : NULL;
        t->nkeys = pk->start[i + 1] - pk->start[i];
        if (decode_plane(c, t, c->base + spans[2 * i], c->base + spans[2 * i + 1], (int32_t)i)) {
            return;
        }
    }
}

/* Hands the tables over as (lines, events, stats, promoted); frees them either way. */
static PyObject *tables_result(Tables *t)
{
    PyObject *lines = table_to_dict(&t->lines);
    PyObject *events = lines ? table_to_dict(&t->events) : NULL;
    PyObject *stats = events ? table_to_dict(&t->stats) : NULL;
    PyObject *promoted = stats ? promo_to_list(t) : NULL;
    tables_free(t);
    if (promoted == NULL) {
        Py_XDECREF(lines);
        Py_XDECREF(events);
        Py_XDECREF(stats);
        return NULL;
    }
    return Py_BuildValue("(NNNN)", lines, events, stats, promoted);
}

PyDoc_STRVAR(decode_doc,
             "decode(data, planes, k=0, keys=None, stats=True)\n"
             "    -> (lines, events, stats, promoted)\n\n"
             "Decodes the lines, events and stats of the XPlane messages at the given\n"
             "(start, end) byte spans of data (as returned by scan()). lines, events and\n"
             "stats are dicts {column name: Column}; lines[\"plane\"] is the position in\n"
             "`planes`. promoted lists k writable (values, present) Column pairs, int64 and\n"
             "bool, one row per event: keys[i] lists the (stat metadata id, column) pairs of\n"
             "plane i, ids strictly increasing, and an event's column holds the integer\n"
             "value of its last stat with such an id (absent if that one is not an integer).\n"
             "With stats false, stats are checked and promoted but not stored (no rows).");

static PyObject *wire_decode(PyObject *module, PyObject *args)
{
    (void)module;
    Py_buffer view;
    PyObject *spans_obj, *keys_obj = Py_None;
    Py_ssize_t k = 0;
    int keep_stats = 1;
    if (!PyArg_ParseTuple(args, "y*O|nOp:decode", &view, &spans_obj, &k, &keys_obj,
                          &keep_stats)) {
        return NULL;
    }
    if (k < 0 || k > MAX_PROMOTED) {
        PyBuffer_Release(&view);
        return PyErr_Format(PyExc_ValueError, "k=%zd outside [0, %d]", k, MAX_PROMOTED);
    }
    Py_ssize_t nspans = 0;
    PlaneKeys pk = {NULL, NULL};
    Tables t;
    Py_ssize_t *spans = read_spans(spans_obj, view.len, &nspans);
    if (spans == NULL || read_keys(keys_obj, nspans, k, &pk) < 0 ||
        tables_init(&t, k, keep_stats) < 0) {
        plane_keys_free(&pk);
        PyMem_Free(spans);
        PyBuffer_Release(&view);
        return NULL;
    }
    Ctx c = {.base = view.buf};

    Py_BEGIN_ALLOW_THREADS
    decode_planes(&c, &t, spans, nspans, &pk);
    Py_END_ALLOW_THREADS

    plane_keys_free(&pk);
    PyMem_Free(spans);
    PyBuffer_Release(&view);
    if (c.failed) {
        tables_free(&t);
        return raise_ctx(&c);
    }
    return tables_result(&t);
}

static PyMethodDef wire_methods[] = {
    {"scan", wire_scan, METH_VARARGS, scan_doc},
    {"decode", wire_decode, METH_VARARGS, decode_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef wire_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "tftrace.analysis.xplane._wire",
    .m_doc = "Single-pass decoder of TF profiler XSpace traces into column buffers.",
    .m_size = -1,
    .m_methods = wire_methods,
};

PyMODINIT_FUNC PyInit__wire(void)
{
    if (PyType_Ready(&ColumnType) < 0) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&wire_module);
    if (m == NULL) {
        return NULL;
    }
    WireError = PyErr_NewExceptionWithDoc(
        "tftrace.analysis.xplane._wire.WireError",
        "Malformed input; args are (message, byte offset).", PyExc_ValueError, NULL);
    if (WireError == NULL || PyModule_AddObjectRef(m, "WireError", WireError) < 0 ||
        PyModule_AddObjectRef(m, "Column", (PyObject *)&ColumnType) < 0 ||
        PyModule_AddIntConstant(m, "ABI", WIRE_ABI) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
