/*
 * compiler.c - libporta's compiler switches and reports (porta.h, "The
 * compiler") for torch_porta's fused mode, torch.compile backend, metrics
 * and explain, and the issuing site of every op recorded in fused mode.
 */
#include <stdio.h>
#include <string.h>

#include "porta_py.h"

/* ---- the issuing site ---- */

/* Frames under these directories (torch's and torch_porta's) are skipped
 * when naming the line that issued an op: the user's line is the one that
 * explains an error raised far later, at a flush. */
#define MAX_SKIPPED_DIRS 4
static char *skipped_dirs[MAX_SKIPPED_DIRS];
static size_t skipped_lengths[MAX_SKIPPED_DIRS];
static int skipped_count;

static int is_skipped(const char *filename) {
    for (int i = 0; i < skipped_count; i++)
        if (!strncmp(filename, skipped_dirs[i], skipped_lengths[i]))
            return 1;
    return 0;
}

/* "file:line (aten::name)", keeping the end of a long file name so the line
 * number survives libporta's fixed-size site. */
static void format_site(char *site, size_t cap, const char *filename, int line,
                        const char *op_name) {
    /* An op name takes at most 48 characters, the line at most 11. */
    int op_length = (int)strnlen(op_name, 48);
    char tail[80];
    int tail_length = snprintf(tail, sizeof tail, ":%d (aten::%.*s)", line, op_length, op_name);
    size_t room = cap - 1 - (size_t)tail_length;
    size_t length = strlen(filename);
    if (length > room)
        snprintf(site, cap, "...%s%s", filename + length - (room - 3), tail);
    else
        snprintf(site, cap, "%s%s", filename, tail);
}

/* Set while a compiled graph names the sites of its ops itself (from its
 * nodes' source lines), so the kernels do not look at Python frames. */
static _Thread_local int site_pinned;

void porta_py_trace_site(PyObject *op_name) {
    if (site_pinned)
        return;
    /* libporta keeps 95 characters of a site. */
    char site[96];
    const char *op = PyUnicode_AsUTF8(op_name);
    if (!op) {
        PyErr_Clear();
        op = "?";
    }
    PyFrameObject *frame = PyEval_GetFrame(); /* borrowed */
    Py_XINCREF(frame);
    while (frame) {
        PyCodeObject *code = PyFrame_GetCode(frame);
        const char *filename = PyUnicode_AsUTF8(code->co_filename);
        if (!filename)
            PyErr_Clear();
        if (filename && !is_skipped(filename)) {
            format_site(site, sizeof site, filename, PyFrame_GetLineNumber(frame), op);
            Py_DECREF(code);
            Py_DECREF(frame);
            porta_trace_set_site(site);
            return;
        }
        Py_DECREF(code);
        PyFrameObject *back = PyFrame_GetBack(frame);
        Py_DECREF(frame);
        frame = back;
    }
    /* No Python frame outside torch: autograd's engine thread runs the
     * backward without one. */
    snprintf(site, sizeof site, "autograd backward (aten::%s)", op);
    porta_trace_set_site(site);
}

/* trace_site_setup(dirs): the directories whose frames are skipped. */
static PyObject *trace_site_setup(PyObject *module, PyObject *dirs) {
    PyObject *fast = PySequence_Fast(dirs, "trace_site_setup: expected a list of directories");
    if (!fast)
        return NULL;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(fast);
    if (count > MAX_SKIPPED_DIRS) {
        Py_DECREF(fast);
        return PyErr_Format(PyExc_ValueError,
                            "trace_site_setup: at most %d directories, got %zd",
                            MAX_SKIPPED_DIRS, count);
    }
    char *copies[MAX_SKIPPED_DIRS] = {0};
    for (Py_ssize_t i = 0; i < count; i++) {
        const char *dir = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(fast, i));
        copies[i] = dir ? PyMem_RawMalloc(strlen(dir) + 1) : NULL;
        if (!copies[i]) {
            for (Py_ssize_t k = 0; k < i; k++)
                PyMem_RawFree(copies[k]);
            Py_DECREF(fast);
            return dir ? PyErr_NoMemory() : NULL;
        }
        strcpy(copies[i], dir);
    }
    Py_DECREF(fast);
    for (int i = 0; i < skipped_count; i++)
        PyMem_RawFree(skipped_dirs[i]);
    skipped_count = (int)count;
    for (int i = 0; i < skipped_count; i++) {
        skipped_dirs[i] = copies[i];
        skipped_lengths[i] = strlen(copies[i]);
    }
    Py_RETURN_NONE;
}

/* trace_site_here(op_name): the issuing Python line of a glue kernel's op. */
static PyObject *trace_site_here(PyObject *module, PyObject *op_name) {
    if (!PyUnicode_Check(op_name))
        return PyErr_Format(PyExc_TypeError, "trace_site_here: expected an op name, got %s",
                            Py_TYPE(op_name)->tp_name);
    porta_py_trace_site(op_name);
    Py_RETURN_NONE;
}

/* trace_pin_site(site or None): the site of the ops this thread issues
 * next, kept until unpinned with None, whatever frames issue them. */
static PyObject *trace_pin_site(PyObject *module, PyObject *site) {
    if (site == Py_None) {
        site_pinned = 0;
        porta_trace_set_site(NULL);
        Py_RETURN_NONE;
    }
    const char *text = PyUnicode_AsUTF8(site);
    if (!text)
        return NULL;
    porta_trace_set_site(text);
    site_pinned = 1;
    Py_RETURN_NONE;
}

/* ---- fusion ---- */

static PyObject *set_fusion(PyObject *module, PyObject *flag) {
    int on = PyObject_IsTrue(flag);
    if (on < 0)
        return NULL;
    porta_status *status;
    Py_BEGIN_ALLOW_THREADS
    status = porta_set_fusion(on);
    Py_END_ALLOW_THREADS
    if (status)
        return porta_py_raise(status);
    Py_RETURN_NONE;
}

static PyObject *get_fusion(PyObject *module, PyObject *unused) {
    return PyBool_FromLong(porta_get_fusion());
}

static PyObject *flush(PyObject *module, PyObject *unused) {
    porta_status *status;
    Py_BEGIN_ALLOW_THREADS
    status = porta_flush();
    Py_END_ALLOW_THREADS
    if (status)
        return porta_py_raise(status);
    Py_RETURN_NONE;
}

/* ---- reports ---- */

static int set_count(PyObject *dict, const char *key, uint64_t value) {
    PyObject *number = PyLong_FromUnsignedLongLong(value);
    int result = number ? PyDict_SetItemString(dict, key, number) : -1;
    Py_XDECREF(number);
    return result;
}

static PyObject *compiler_stats(PyObject *module, PyObject *unused) {
    porta_compiler_stats stats;
    porta_compiler_stats_get(&stats);
    PyObject *dict = PyDict_New();
    if (!dict)
        return NULL;
    struct {
        const char *key;
        uint64_t value;
    } counts[] = {
        {"flushes", stats.flushes},
        {"graphs_compiled", stats.graphs_compiled},
        {"graph_cache_hits", stats.graph_cache_hits},
        {"kernels_compiled", stats.kernels_compiled},
        {"kernel_memory_hits", stats.kernel_memory_hits},
        {"kernel_disk_hits", stats.kernel_disk_hits},
        {"kernels_run", stats.kernels_run},
        {"prims_fused", stats.prims_fused},
        {"prims_alone", stats.prims_alone},
        {"last_trace_kernels", stats.last_trace_kernels},
    };
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        if (set_count(dict, counts[i].key, counts[i].value) < 0) {
            Py_DECREF(dict);
            return NULL;
        }
    }
    PyObject *seconds = PyFloat_FromDouble(stats.compile_seconds);
    if (!seconds || PyDict_SetItemString(dict, "compile_seconds", seconds) < 0) {
        Py_XDECREF(seconds);
        Py_DECREF(dict);
        return NULL;
    }
    Py_DECREF(seconds);
    return dict;
}

static PyObject *compiler_stats_reset(PyObject *module, PyObject *unused) {
    porta_compiler_stats_reset();
    Py_RETURN_NONE;
}

static PyObject *explain_start(PyObject *module, PyObject *flag) {
    int with_source = PyObject_IsTrue(flag);
    if (with_source < 0)
        return NULL;
    porta_explain_start(with_source);
    Py_RETURN_NONE;
}

static PyObject *explain_stop(PyObject *module, PyObject *unused) {
    char *report = porta_explain_stop();
    if (!report)
        return PyErr_NoMemory();
    PyObject *text = PyUnicode_DecodeUTF8(report, (Py_ssize_t)strlen(report), "replace");
    free(report);
    return text;
}

PyMethodDef porta_py_compiler_methods[] = {
    {"set_fusion", set_fusion, METH_O,
     "set_fusion(flag): record ops for fused kernels (True); False flushes first."},
    {"get_fusion", get_fusion, METH_NOARGS, "Whether ops are recorded for fusion."},
    {"flush", flush, METH_NOARGS, "Runs every recorded op; raises the first failure."},
    {"trace_site_here", trace_site_here, METH_O,
     "trace_site_here(op_name): the calling Python line becomes the site of the next ops."},
    {"trace_pin_site", trace_pin_site, METH_O,
     "trace_pin_site(site or None): the site of the next ops until unpinned with None."},
    {"trace_site_setup", trace_site_setup, METH_O,
     "trace_site_setup(dirs): directories whose frames are not issuing sites."},
    {"compiler_stats", compiler_stats, METH_NOARGS, "The compiler's counters, as a dict."},
    {"compiler_stats_reset", compiler_stats_reset, METH_NOARGS, "Zeroes the counters."},
    {"explain_start", explain_start, METH_O,
     "explain_start(with_source): collect a report of the kernels of each flush."},
    {"explain_stop", explain_stop, METH_NOARGS, "Stops collecting; returns the report."},
    {NULL, NULL, 0, NULL},
};
