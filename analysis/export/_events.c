/*
 * JSON text of millions of trace events, in the order of one sort, in one pass.
 *
 * Why C: an export of a 2-million-event trace is ~330 MB of JSON. Built with pyarrow's string
 * kernels (trace_text.py, the fallback when this is not built) it takes several passes over the
 * text per field, a `take` of all of it into sorted order and a join; here every event is
 * written once, straight into the output buffer, in sorted order.
 *
 * What to write comes from Python as one "program" per batch of events (trace_fields.py
 * compiles it): a list of ops, each writing one piece of every row's event:
 *
 *   (LIT,  key, text)                    a constant: the same JSON text on every row
 *   (STR,  key, codes int32, table)      table[codes[row]]: pre-escaped JSON strings; < 0: null
 *   (INT,  key, values int64, valid u8)  a decimal integer; valid[row] == 0: null (valid: None)
 *   (US,   key, ns int64, codes int32, table)
 *                                        ns / 1000 as the exact decimal "W.FFF"; where codes[row]
 *                                        >= 0, table[codes[row]] instead (the float's repr where
 *                                        the value had to move an ulp, see trace_format.py)
 *   (OPEN, key)                          "{": an object, nested in the current one
 *   (CLOSE, None)                        "}"
 *
 * `key` is the field's JSON key text ('"ts":') or None for a value outside any object. Objects
 * omit a field whose value is null on that row, and put commas only between fields written.
 * Rows are taken in `order` (indices into the batches laid end to end) and separated by commas;
 * `prefix` and `suffix` are written around them, so the whole file is one buffer (bytearray).
 *
 * `sort_ties` gives that order cheaply: see its comment.
 *
 * Input is checked: op shapes, buffer sizes against the batch's row count, codes against their
 * tables and order against the rows; the result is then always valid JSON.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Bumped when the Python side must change with this file (a stale build is then ignored). */
#define EVENTS_ABI 1

enum { OP_LIT = 0, OP_STR = 1, OP_INT = 2, OP_US = 3, OP_OPEN = 4, OP_CLOSE = 5 };

#define MAX_DEPTH 16
#define INT_TEXT 21 /* "-9223372036854775808" and one spare */
#define US_TEXT 24  /* sign, 17 digits of whole µs, '.', 3 digits */

typedef struct {
    const char *ptr;
    Py_ssize_t len;
} Text;

typedef struct {
    int op;
    Text key; /* len 0 and ptr NULL: no key */
    Text lit;
    const void *values; /* int32 codes (STR), int64 (INT, US) */
    const uint8_t *valid;
    const int32_t *codes; /* US overrides */
    Text *table;
    Py_ssize_t table_len;
    Py_ssize_t table_max; /* longest table entry */
} Op;

typedef struct {
    Py_ssize_t rows;
    Op *ops;
    Py_ssize_t n_ops;
} Program;

/* Everything that must be released: buffers pinned while writing, tables. */
typedef struct {
    Py_buffer *views;
    Py_ssize_t n_views, cap_views;
    Program *programs;
    Py_ssize_t n_programs;
} Pins;

static void pins_release(Pins *p) {
    for (Py_ssize_t i = 0; i < p->n_views; i++) PyBuffer_Release(&p->views[i]);
    PyMem_Free(p->views);
    for (Py_ssize_t i = 0; i < p->n_programs; i++) {
        Program *g = &p->programs[i];
        if (g->ops) {
            for (Py_ssize_t j = 0; j < g->n_ops; j++) PyMem_Free(g->ops[j].table);
            PyMem_Free(g->ops);
        }
    }
    PyMem_Free(p->programs);
}

/* A contiguous buffer of exactly `count` items of `itemsize` bytes, pinned until release. */
static void *pin_flags(Pins *p, PyObject *obj, Py_ssize_t count, Py_ssize_t itemsize,
                       const char *what, int flags) {
    if (p->n_views == p->cap_views) {
        Py_ssize_t cap = p->cap_views ? 2 * p->cap_views : 16;
        Py_buffer *grown = PyMem_Realloc(p->views, (size_t)cap * sizeof(Py_buffer));
        if (!grown) {
            PyErr_NoMemory();
            return NULL;
        }
        p->views = grown;
        p->cap_views = cap;
    }
    Py_buffer *view = &p->views[p->n_views];
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | flags) < 0) return NULL;
    p->n_views++;
    if (view->len != count * itemsize) {
        PyErr_Format(PyExc_ValueError, "%s: %zd bytes, expected %zd rows of %zd", what, view->len,
                     count, itemsize);
        return NULL;
    }
    return view->buf;
}

static const void *pin(Pins *p, PyObject *obj, Py_ssize_t count, Py_ssize_t itemsize,
                       const char *what) {
    return pin_flags(p, obj, count, itemsize, what, 0);
}

static int text_of(PyObject *obj, Text *out, const char *what) {
    if (obj == Py_None) {
        out->ptr = NULL;
        out->len = 0;
        return 0;
    }
    if (!PyBytes_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s must be bytes or None", what);
        return -1;
    }
    out->ptr = PyBytes_AS_STRING(obj);
    out->len = PyBytes_GET_SIZE(obj);
    return 0;
}

static int table_of(PyObject *obj, Op *op) {
    if (!PyList_Check(obj)) {
        PyErr_SetString(PyExc_TypeError, "a table must be a list of bytes");
        return -1;
    }
    Py_ssize_t n = PyList_GET_SIZE(obj);
    op->table = PyMem_Calloc((size_t)(n ? n : 1), sizeof(Text));
    if (!op->table) {
        PyErr_NoMemory();
        return -1;
    }
    op->table_len = n;
    op->table_max = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (text_of(PyList_GET_ITEM(obj, i), &op->table[i], "a table entry") < 0) return -1;
        if (op->table[i].ptr == NULL) {
            PyErr_SetString(PyExc_TypeError, "a table entry must be bytes");
            return -1;
        }
        if (op->table[i].len > op->table_max) op->table_max = op->table[i].len;
    }
    return 0;
}

static int codes_in_table(const int32_t *codes, Py_ssize_t rows, Py_ssize_t table_len) {
    for (Py_ssize_t r = 0; r < rows; r++) {
        if (codes[r] >= table_len) {
            PyErr_Format(PyExc_ValueError, "code %d of row %zd is past its table (%zd)",
                         (int)codes[r], r, table_len);
            return -1;
        }
    }
    return 0;
}

static int parse_op(Pins *p, PyObject *tuple, Py_ssize_t rows, Op *op, int *depth) {
    if (!PyTuple_Check(tuple) || PyTuple_GET_SIZE(tuple) < 2) {
        PyErr_SetString(PyExc_TypeError, "an op must be a tuple (code, key, ...)");
        return -1;
    }
    Py_ssize_t size = PyTuple_GET_SIZE(tuple);
    long code = PyLong_AsLong(PyTuple_GET_ITEM(tuple, 0));
    if (code == -1 && PyErr_Occurred()) return -1;
    op->op = (int)code;
    if (text_of(PyTuple_GET_ITEM(tuple, 1), &op->key, "a key") < 0) return -1;
    static const Py_ssize_t sizes[] = {3, 4, 4, 5, 2, 2};
    if (code < OP_LIT || code > OP_CLOSE || size != sizes[code]) {
        PyErr_Format(PyExc_ValueError, "op %ld with %zd items", code, size);
        return -1;
    }
    PyObject *a = size > 2 ? PyTuple_GET_ITEM(tuple, 2) : NULL;
    PyObject *b = size > 3 ? PyTuple_GET_ITEM(tuple, 3) : NULL;
    switch (code) {
    case OP_LIT:
        if (text_of(a, &op->lit, "a literal") < 0) return -1;
        if (!op->lit.ptr) {
            PyErr_SetString(PyExc_TypeError, "a literal must be bytes");
            return -1;
        }
        return 0;
    case OP_STR:
        if (!(op->values = pin(p, a, rows, 4, "string codes"))) return -1;
        if (table_of(b, op) < 0) return -1;
        return codes_in_table(op->values, rows, op->table_len);
    case OP_INT:
        if (!(op->values = pin(p, a, rows, 8, "integers"))) return -1;
        if (b != Py_None && !(op->valid = pin(p, b, rows, 1, "integer validity"))) return -1;
        return 0;
    case OP_US:
        if (!(op->values = pin(p, a, rows, 8, "times"))) return -1;
        if (b != Py_None && !(op->codes = pin(p, b, rows, 4, "time overrides"))) return -1;
        if (table_of(PyTuple_GET_ITEM(tuple, 4), op) < 0) return -1;
        return op->codes ? codes_in_table(op->codes, rows, op->table_len) : 0;
    case OP_OPEN:
        if (++*depth >= MAX_DEPTH) {
            PyErr_SetString(PyExc_ValueError, "objects nested too deep");
            return -1;
        }
        return 0;
    default: /* OP_CLOSE */
        if (op->key.ptr || --*depth < 0) {
            PyErr_SetString(PyExc_ValueError, "a close without its open");
            return -1;
        }
        return 0;
    }
}

static int parse_program(Pins *p, PyObject *item, Program *g) {
    PyObject *ops;
    if (!PyArg_ParseTuple(item, "nO!", &g->rows, &PyList_Type, &ops)) return -1;
    if (g->rows < 0) {
        PyErr_SetString(PyExc_ValueError, "negative row count");
        return -1;
    }
    g->n_ops = PyList_GET_SIZE(ops);
    g->ops = PyMem_Calloc((size_t)(g->n_ops ? g->n_ops : 1), sizeof(Op));
    if (!g->ops) {
        PyErr_NoMemory();
        return -1;
    }
    int depth = 0;
    for (Py_ssize_t j = 0; j < g->n_ops; j++) {
        if (parse_op(p, PyList_GET_ITEM(ops, j), g->rows, &g->ops[j], &depth) < 0) return -1;
        if (depth == 0 && g->ops[j].key.ptr) {
            PyErr_SetString(PyExc_ValueError, "a keyed field outside any object");
            return -1;
        }
    }
    if (depth != 0) {
        PyErr_SetString(PyExc_ValueError, "an object left open");
        return -1;
    }
    return 0;
}

/* The most one row of the program can write (commas and keys included). */
static Py_ssize_t row_bound(const Program *g) {
    Py_ssize_t total = 1; /* the comma between rows */
    for (Py_ssize_t j = 0; j < g->n_ops; j++) {
        const Op *op = &g->ops[j];
        total += op->key.len + 1;
        switch (op->op) {
        case OP_LIT: total += op->lit.len; break;
        case OP_STR: total += op->table_max; break;
        case OP_INT: total += INT_TEXT; break;
        case OP_US: total += op->table_max > US_TEXT ? op->table_max : US_TEXT; break;
        default: total += 1;
        }
    }
    return total;
}

/* ------------------------------------------------------------------------------------------ */
/* Writing                                                                                      */

static char *put_u64(char *out, uint64_t v) {
    char digits[INT_TEXT];
    int n = 0;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n) *out++ = digits[--n];
    return out;
}

static char *put_i64(char *out, int64_t v) {
    if (v < 0) {
        *out++ = '-';
        return put_u64(out, (uint64_t)0 - (uint64_t)v);
    }
    return put_u64(out, (uint64_t)v);
}

static char *put_us(char *out, int64_t ns) {
    uint64_t magnitude = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
    if (ns < 0) *out++ = '-';
    out = put_u64(out, magnitude / 1000);
    unsigned part = (unsigned)(magnitude % 1000);
    out[0] = '.';
    out[1] = (char)('0' + part / 100);
    out[2] = (char)('0' + part / 10 % 10);
    out[3] = (char)('0' + part % 10);
    return out + 4;
}

static char *put(char *out, Text t) {
    memcpy(out, t.ptr, (size_t)t.len);
    return out + t.len;
}

static char *write_row(char *out, const Program *g, Py_ssize_t r) {
    int first[MAX_DEPTH];
    int depth = 0;
    first[0] = 1;
    for (Py_ssize_t j = 0; j < g->n_ops; j++) {
        const Op *op = &g->ops[j];
        /* null values are left out, key and all */
        if (op->op == OP_STR && ((const int32_t *)op->values)[r] < 0) continue;
        if (op->op == OP_INT && op->valid && !op->valid[r]) continue;
        if (op->op == OP_CLOSE) {
            *out++ = '}';
            depth--;
            continue;
        }
        if (op->key.ptr) {
            if (!first[depth]) *out++ = ',';
            out = put(out, op->key);
        }
        first[depth] = 0;
        switch (op->op) {
        case OP_LIT: out = put(out, op->lit); break;
        case OP_STR: out = put(out, op->table[((const int32_t *)op->values)[r]]); break;
        case OP_INT: out = put_i64(out, ((const int64_t *)op->values)[r]); break;
        case OP_US:
            if (op->codes && op->codes[r] >= 0)
                out = put(out, op->table[op->codes[r]]);
            else
                out = put_us(out, ((const int64_t *)op->values)[r]);
            break;
        default: /* OP_OPEN */
            *out++ = '{';
            first[++depth] = 1;
        }
    }
    return out;
}

static PyObject *format_events(PyObject *self, PyObject *args) {
    PyObject *batches, *order_obj;
    Py_buffer prefix, suffix;
    if (!PyArg_ParseTuple(args, "O!Oy*y*", &PyList_Type, &batches, &order_obj, &prefix, &suffix))
        return NULL;
    Pins pins = {0};
    PyObject *result = NULL;
    Py_ssize_t n_batches = PyList_GET_SIZE(batches);
    Py_ssize_t *starts = PyMem_Calloc((size_t)n_batches + 1, sizeof(Py_ssize_t));
    pins.programs = PyMem_Calloc((size_t)(n_batches ? n_batches : 1), sizeof(Program));
    if (!starts || !pins.programs) {
        PyErr_NoMemory();
        goto done;
    }
    pins.n_programs = n_batches;
    Py_ssize_t total = 0, bound = prefix.len + suffix.len;
    for (Py_ssize_t i = 0; i < n_batches; i++) {
        if (parse_program(&pins, PyList_GET_ITEM(batches, i), &pins.programs[i]) < 0) goto done;
        starts[i] = total;
        total += pins.programs[i].rows;
        Py_ssize_t per_row = row_bound(&pins.programs[i]);
        if (pins.programs[i].rows > (PY_SSIZE_T_MAX - bound) / per_row) {
            PyErr_NoMemory();
            goto done;
        }
        bound += per_row * pins.programs[i].rows;
    }
    starts[n_batches] = total;
    /* order: int64 row indices, as many as the caller wants written */
    Py_ssize_t n_order = PyObject_Length(order_obj);
    if (n_order < 0) goto done;
    const int64_t *order = pin(&pins, order_obj, n_order, 8, "order");
    if (!order) goto done;
    for (Py_ssize_t k = 0; k < n_order; k++) {
        if (order[k] < 0 || order[k] >= total) {
            PyErr_Format(PyExc_ValueError, "order[%zd] = %lld is not a row", k, (long long)order[k]);
            goto done;
        }
    }

    result = PyByteArray_FromStringAndSize(NULL, bound);
    if (!result) goto done;
    char *base = PyByteArray_AS_STRING(result), *out = base;
    Py_BEGIN_ALLOW_THREADS;
    memcpy(out, prefix.buf, (size_t)prefix.len);
    out += prefix.len;
    Py_ssize_t batch = 0;
    for (Py_ssize_t k = 0; k < n_order; k++) {
        Py_ssize_t row = (Py_ssize_t)order[k];
        if (row < starts[batch] || row >= starts[batch + 1]) { /* binary search: few batches */
            Py_ssize_t lo = 0, hi = n_batches;
            while (hi - lo > 1) {
                Py_ssize_t mid = (lo + hi) / 2;
                if (starts[mid] <= row) lo = mid; else hi = mid;
            }
            batch = lo;
        }
        if (k) *out++ = ',';
        out = write_row(out, &pins.programs[batch], row - starts[batch]);
    }
    memcpy(out, suffix.buf, (size_t)suffix.len);
    out += suffix.len;
    Py_END_ALLOW_THREADS;
    if (PyByteArray_Resize(result, out - base) < 0) Py_CLEAR(result);

done:
    pins_release(&pins);
    PyMem_Free(starts);
    PyBuffer_Release(&prefix);
    PyBuffer_Release(&suffix);
    return result;
}

/* ------------------------------------------------------------------------------------------ */
/* Order                                                                                        */

typedef struct {
    int64_t neg, tie, index;
} Tied;

static int tied_cmp(const void *a, const void *b) {
    const Tied *x = a, *y = b;
    if (x->neg != y->neg) return x->neg < y->neg ? -1 : 1;
    if (x->tie != y->tie) return x->tie < y->tie ? -1 : 1;
    return 0;
}

/*
 * sort_ties(order, at, neg, tie): `order` sorts `at` (a stable argsort); within each run of
 * equal `at`, reorder by (neg, tie) in place. Sorting by time alone is cheap (the batches come
 * in time-sorted runs), and tied runs are short: this replaces a four-key lexsort.
 */
static PyObject *sort_ties(PyObject *self, PyObject *args) {
    PyObject *order_obj, *at_obj, *neg_obj, *tie_obj;
    if (!PyArg_ParseTuple(args, "OOOO", &order_obj, &at_obj, &neg_obj, &tie_obj)) return NULL;
    Pins pins = {0};
    Tied *scratch = NULL;
    Py_ssize_t n = PyObject_Length(at_obj);
    if (n < 0) goto fail;
    int64_t *order = (int64_t *)pin_flags(&pins, order_obj, n, 8, "order", PyBUF_WRITABLE);
    const int64_t *at = pin(&pins, at_obj, n, 8, "times");
    const int64_t *neg = pin(&pins, neg_obj, n, 8, "negative lengths");
    const int64_t *tie = pin(&pins, tie_obj, n, 8, "tie breaks");
    if (!order || !at || !neg || !tie) goto fail;
    for (Py_ssize_t k = 0; k < n; k++) {
        if (order[k] < 0 || order[k] >= n) {
            PyErr_Format(PyExc_ValueError, "order[%zd] is not a row", k);
            goto fail;
        }
    }
    Py_ssize_t longest = 0;
    for (Py_ssize_t lo = 0, hi; lo < n; lo = hi) {
        for (hi = lo + 1; hi < n && at[order[hi]] == at[order[lo]]; hi++) {}
        if (hi - lo > longest) longest = hi - lo;
    }
    scratch = PyMem_Malloc((size_t)(longest ? longest : 1) * sizeof(Tied));
    if (!scratch) {
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t lo = 0, hi; lo < n; lo = hi) {
        for (hi = lo + 1; hi < n && at[order[hi]] == at[order[lo]]; hi++) {}
        if (hi - lo < 2) continue;
        for (Py_ssize_t k = lo; k < hi; k++) {
            int64_t i = order[k];
            scratch[k - lo] = (Tied){neg[i], tie[i], i};
        }
        qsort(scratch, (size_t)(hi - lo), sizeof(Tied), tied_cmp);
        for (Py_ssize_t k = lo; k < hi; k++) order[k] = scratch[k - lo].index;
    }
    PyMem_Free(scratch);
    pins_release(&pins);
    Py_RETURN_NONE;
fail:
    PyMem_Free(scratch);
    pins_release(&pins);
    return NULL;
}

static PyMethodDef methods[] = {
    {"format_events", format_events, METH_VARARGS,
     "format_events(batches, order, prefix, suffix) -> bytearray: see the module's source."},
    {"sort_ties", sort_ties, METH_VARARGS,
     "sort_ties(order, at, neg, tie): reorder runs of equal times in place, see the source."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_events", "JSON text of trace events in one pass (see _events.c).",
    -1, methods,
};

PyMODINIT_FUNC PyInit__events(void) {
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    if (PyModule_AddIntConstant(m, "ABI", EVENTS_ABI) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
