/*
 * One reading of every thread of the workload from /proc, for the OS thread sampler.
 *
 * Why C: the sampler runs 100 times a second beside the workload, on the workload's CPUs.
 * In Python, three quarters of a reading was the interpreter's own work (splitting and
 * converting the text of ~30 stat files); here the reading is the kernel's pread calls and a
 * few microseconds of parsing, with the GIL released. os_sampler.py falls back to its Python
 * loop when this is not built, and writes the same rows.
 *
 * read_threads(fds, tids, now) -> (rows, heads)
 *   fds   int32 buffer, two per thread: its open stat file and schedstat file (-1: none)
 *   tids  int64 buffer, one per thread
 *   now   the sample's time (int, ns)
 *   rows  bytes: int64 rows of (t_ns, tid, state, utime, stime, cpu_ns, wait_ns, slices, cpu),
 *         one per thread read (a thread whose files cannot be read any more is left out)
 *   heads bytes: one uint64 per thread, a hash of its stat line up to the name's closing ')'
 *         (it changes when the thread is renamed); 0 where the thread was not read
 *
 * wait_for_threads(task_dir, signature, interval_s, timeout_s) -> signature
 *   For the thread-identity watcher inside the workload: lists task_dir (/proc/self/task) every
 *   interval_s, with the GIL released, and returns as soon as the list of threads differs
 *   from the one `signature` stands for (0: none yet), or after timeout_s. The watcher polled
 *   this in Python 200 times a second, and each poll took the GIL from the workload's thread.
 *
 * Fields follow proc(5); after the name's ')' the state is field 3, utime 14, stime 15,
 * processor 39. schedstat is "on-cpu ns, run-queue wait ns, timeslices".
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dirent.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Bumped when the Python side must change with this file (a stale build is then ignored). */
#define PROCSTAT_ABI 2
#define ROW 9
#define STAT_MAX 1024
#define SCHED_MAX 128

/* Field positions after the name's ')', from 0 (proc(5) field 3 is 0). */
enum { F_STATE = 0, F_UTIME = 11, F_STIME = 12, F_PROCESSOR = 36, F_LAST = 36 };

static uint64_t head_hash(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ULL;
    }
    return h | 1; /* never 0: 0 means "not read" */
}

/* Splits `s` (NUL-terminated) on spaces into up to `max` fields; returns how many. */
static int split_fields(char *s, const char **fields, int max) {
    int n = 0;
    while (*s && n < max) {
        while (*s == ' ' || *s == '\n') s++;
        if (!*s) break;
        fields[n++] = s;
        while (*s && *s != ' ' && *s != '\n') s++;
    }
    return n;
}

static long long to_ll(const char *s) {
    int neg = (*s == '-');
    if (neg) s++;
    long long v = 0;
    while (*s >= '0' && *s <= '9') v = v * 10 + (*s++ - '0');
    return neg ? -v : v;
}

/* 1: row written; 0: the thread is gone or its text is not a stat line. */
static int read_one(int stat_fd, int sched_fd, int64_t tid, int64_t now, int64_t *row,
                    uint64_t *head) {
    char buf[STAT_MAX];
    ssize_t got = pread(stat_fd, buf, sizeof buf - 1, 0);
    if (got <= 0) return 0;
    buf[got] = '\0';
    char *close = memrchr(buf, ')', (size_t)got);
    if (!close || close + 2 > buf + got) return 0;
    const char *fields[F_LAST + 1];
    if (split_fields(close + 2, fields, F_LAST + 1) <= F_LAST) return 0;

    int64_t sched[3] = {-1, -1, -1};
    if (sched_fd >= 0) {
        char sbuf[SCHED_MAX];
        ssize_t sgot = pread(sched_fd, sbuf, sizeof sbuf - 1, 0);
        if (sgot < 0) return 0;
        sbuf[sgot] = '\0';
        const char *sf[3];
        if (split_fields(sbuf, sf, 3) == 3)
            for (int i = 0; i < 3; i++) sched[i] = to_ll(sf[i]);
    }
    *head = head_hash(buf, (size_t)(close - buf));
    row[0] = now;
    row[1] = tid;
    row[2] = (unsigned char)fields[F_STATE][0];
    row[3] = to_ll(fields[F_UTIME]);
    row[4] = to_ll(fields[F_STIME]);
    row[5] = sched[0];
    row[6] = sched[1];
    row[7] = sched[2];
    row[8] = to_ll(fields[F_PROCESSOR]);
    return 1;
}

static PyObject *read_threads(PyObject *self, PyObject *args) {
    Py_buffer fds, tids;
    long long now;
    if (!PyArg_ParseTuple(args, "y*y*L", &fds, &tids, &now)) return NULL;
    PyObject *result = NULL;
    Py_ssize_t n = tids.len / (Py_ssize_t)sizeof(int64_t);
    if (tids.len % (Py_ssize_t)sizeof(int64_t) || fds.len != n * 2 * (Py_ssize_t)sizeof(int32_t)) {
        PyErr_SetString(PyExc_ValueError, "read_threads: need two int32 fds per int64 tid");
        goto done;
    }
    PyObject *rows = PyBytes_FromStringAndSize(NULL, n * ROW * (Py_ssize_t)sizeof(int64_t));
    PyObject *heads = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(uint64_t));
    if (!rows || !heads) {
        Py_XDECREF(rows);
        Py_XDECREF(heads);
        goto done;
    }
    const int32_t *fd = fds.buf;
    const int64_t *tid = tids.buf;
    int64_t *row = (int64_t *)PyBytes_AS_STRING(rows);
    uint64_t *head = (uint64_t *)PyBytes_AS_STRING(heads);
    Py_ssize_t written = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        head[i] = 0;
        if (read_one(fd[2 * i], fd[2 * i + 1], tid[i], now, row + written * ROW, &head[i]))
            written++;
    }
    Py_END_ALLOW_THREADS
    if (_PyBytes_Resize(&rows, written * ROW * (Py_ssize_t)sizeof(int64_t)) < 0) {
        Py_DECREF(heads);
        goto done;
    }
    result = Py_BuildValue("(NN)", rows, heads);
done:
    PyBuffer_Release(&fds);
    PyBuffer_Release(&tids);
    return result;
}

/* A hash of the names in a directory, in the order listed (/proc lists tasks by tid); 0 when
 * it cannot be read. */
static uint64_t listing_signature(const char *path) {
    DIR *dir = opendir(path);
    if (!dir) return 0;
    uint64_t h = 1469598103934665603ULL;
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
        for (const char *c = entry->d_name; *c; c++) {
            h ^= (unsigned char)*c;
            h *= 1099511628211ULL;
        }
        h ^= '/';
        h *= 1099511628211ULL;
    }
    closedir(dir);
    return h | 1;
}

static double monotonic_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static PyObject *wait_for_threads(PyObject *self, PyObject *args) {
    const char *path;
    unsigned long long signature;
    double interval_s, timeout_s;
    if (!PyArg_ParseTuple(args, "sKdd", &path, &signature, &interval_s, &timeout_s)) return NULL;
    if (!(interval_s > 0) || !(timeout_s >= 0)) {
        PyErr_SetString(PyExc_ValueError, "wait_for_threads: interval must be > 0");
        return NULL;
    }
    uint64_t now_sig = 0;
    Py_BEGIN_ALLOW_THREADS
    double deadline = monotonic_s() + timeout_s;
    struct timespec pause = {(time_t)interval_s, (long)((interval_s - (time_t)interval_s) * 1e9)};
    for (;;) {
        now_sig = listing_signature(path);
        if (now_sig != signature || monotonic_s() >= deadline) break;
        nanosleep(&pause, NULL);
    }
    Py_END_ALLOW_THREADS
    return PyLong_FromUnsignedLongLong(now_sig);
}

static PyMethodDef methods[] = {
    {"wait_for_threads", wait_for_threads, METH_VARARGS,
     "wait_for_threads(task_dir, signature, interval_s, timeout_s) -> signature: see the source."},
    {"read_threads", read_threads, METH_VARARGS,
     "read_threads(fds, tids, now) -> (rows, heads): see the module's source."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_procstat", "One /proc reading of a process's threads (see _procstat.c).",
    -1, methods,
};

PyMODINIT_FUNC PyInit__procstat(void) {
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    if (PyModule_AddIntConstant(m, "ABI", PROCSTAT_ABI) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
