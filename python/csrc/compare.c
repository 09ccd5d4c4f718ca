/*
 * compare.c - energy readings and the comparison report (libporta's
 * src/runtime/energy.h and src/report/report.h) for torch_porta.compare.
 * Both headers need only porta.h; libporta is linked in statically, so the
 * internal functions are reachable from here.
 */
#include "porta_py.h"

#include <stdlib.h>
#include <string.h>

#include "porta_report.h"
#include "porta_energy.h"

/* energy_sample(index) -> {"source", "values", "ranges", "note"} or
 * {"source": None, "reason"}: a snapshot of the counter covering device N. */
static PyObject *energy_sample(PyObject *module, PyObject *args) {
    porta_device_info info;
    if (porta_py_device_info(args, &info) < 0)
        return NULL;
    porta_energy_sample sample;
    char why[PORTA_ENERGY_REASON_CAP];
    if (!porta_energy_read_device(&info, &sample, why, sizeof why))
        return Py_BuildValue("{s:O,s:s}", "source", Py_None, "reason", why);
    PyObject *values = PyList_New(sample.count), *ranges = PyList_New(sample.count);
    if (!values || !ranges) {
        Py_XDECREF(values);
        Py_XDECREF(ranges);
        return NULL;
    }
    for (int i = 0; i < sample.count; i++) {
        PyList_SET_ITEM(values, i, PyLong_FromUnsignedLongLong(sample.value[i]));
        PyList_SET_ITEM(ranges, i, PyLong_FromUnsignedLongLong(sample.range[i]));
    }
    return Py_BuildValue("{s:s,s:N,s:N,s:s}", "source", porta_energy_source_name(sample.source),
                         "values", values, "ranges", ranges, "note",
                         porta_energy_source_note(sample.source));
}

/* compare_device_info(index) -> (backend, name), for the report. */
static PyObject *compare_device_info(PyObject *module, PyObject *args) {
    porta_device_info info;
    if (porta_py_device_info(args, &info) < 0)
        return NULL;
    return Py_BuildValue("(ss)", info.backend, info.name);
}

static int unpack_sample(PyObject *dict, porta_energy_sample *sample) {
    memset(sample, 0, sizeof *sample);
    PyObject *source = dict && PyDict_Check(dict) ? PyDict_GetItemString(dict, "source") : NULL;
    PyObject *values = dict && PyDict_Check(dict) ? PyDict_GetItemString(dict, "values") : NULL;
    PyObject *ranges = dict && PyDict_Check(dict) ? PyDict_GetItemString(dict, "ranges") : NULL;
    const char *name = source && PyUnicode_Check(source) ? PyUnicode_AsUTF8(source) : NULL;
    if (!name || !values || !ranges || !PyList_Check(values) || !PyList_Check(ranges) ||
        PyList_GET_SIZE(values) != PyList_GET_SIZE(ranges) ||
        PyList_GET_SIZE(values) > PORTA_ENERGY_MAX_COUNTERS) {
        PyErr_SetString(PyExc_ValueError, "expected a sample from energy_sample() with a source");
        return -1;
    }
    sample->source = !strcmp(name, "rapl")   ? PORTA_ENERGY_RAPL
                     : !strcmp(name, "nvml") ? PORTA_ENERGY_NVML
                                             : PORTA_ENERGY_NONE;
    sample->count = (int)PyList_GET_SIZE(values);
    for (int i = 0; i < sample->count; i++) {
        sample->value[i] = PyLong_AsUnsignedLongLong(PyList_GET_ITEM(values, i));
        sample->range[i] = PyLong_AsUnsignedLongLong(PyList_GET_ITEM(ranges, i));
        if (PyErr_Occurred())
            return -1;
    }
    return 0;
}

/* energy_joules(start, end) -> joules between two samples (wrap-around
 * accounted for); ValueError when they cannot be compared. */
static PyObject *energy_joules(PyObject *module, PyObject *args) {
    PyObject *start_dict, *end_dict;
    if (!PyArg_ParseTuple(args, "OO", &start_dict, &end_dict))
        return NULL;
    porta_energy_sample start, end;
    if (unpack_sample(start_dict, &start) < 0 || unpack_sample(end_dict, &end) < 0)
        return NULL;
    double joules = porta_energy_joules(&start, &end);
    if (joules < 0) {
        PyErr_SetString(PyExc_ValueError, "energy samples of different counters cannot be compared");
        return NULL;
    }
    return PyFloat_FromDouble(joules);
}

/* compare_render(results_json, prices_json or None, kind) -> text: the
 * report read from its JSON (docs/compare.md), priced, and written as
 * "json", "table" or "html". */
static PyObject *compare_render(PyObject *module, PyObject *args) {
    const char *json, *prices, *kind;
    Py_ssize_t json_length, prices_length = 0;
    if (!PyArg_ParseTuple(args, "s#z#s", &json, &json_length, &prices, &prices_length, &kind))
        return NULL;
    if (strcmp(kind, "json") && strcmp(kind, "table") && strcmp(kind, "html")) {
        PyErr_Format(PyExc_ValueError, "report kind must be json, table or html, not '%s'", kind);
        return NULL;
    }
    porta_report *report = NULL;
    char *text = NULL;
    porta_status *status = porta_report_from_json(json, (size_t)json_length, &report);
    if (!status && prices)
        status = porta_report_apply_prices(report, prices, (size_t)prices_length);
    if (!status)
        status = !strcmp(kind, "json")    ? porta_report_to_json(report, &text)
                 : !strcmp(kind, "table") ? porta_report_table(report, &text)
                                          : porta_report_html(report, &text);
    porta_report_free(report);
    if (status)
        return porta_py_raise(status);
    PyObject *result = PyUnicode_FromString(text);
    free(text);
    return result;
}

/* select_device(objective, workload or None, prices or None, measure)
 * -> the index of the device chosen from stored measurements. */
static PyObject *select_device(PyObject *module, PyObject *args) {
    const char *objective, *workload, *prices;
    int measure;
    if (!PyArg_ParseTuple(args, "szzp", &objective, &workload, &prices, &measure))
        return NULL;
    int index = -1;
    porta_status *status;
    Py_BEGIN_ALLOW_THREADS
    status = porta_select_device(objective, workload, prices, measure, &index);
    Py_END_ALLOW_THREADS
    if (status)
        return porta_py_raise(status);
    return PyLong_FromLong(index);
}

/* select_record(results_json): stores a comparison's figures. */
static PyObject *select_record(PyObject *module, PyObject *args) {
    const char *json;
    Py_ssize_t length;
    if (!PyArg_ParseTuple(args, "s#", &json, &length))
        return NULL;
    porta_report *report = NULL;
    porta_status *status = porta_report_from_json(json, (size_t)length, &report);
    if (!status)
        status = porta_select_record(report);
    porta_report_free(report);
    if (status)
        return porta_py_raise(status);
    Py_RETURN_NONE;
}

static PyObject *select_standard_workload(PyObject *module, PyObject *unused) {
    return PyUnicode_FromString(PORTA_SELECT_STANDARD);
}

PyMethodDef porta_py_compare_methods[] = {
    {"select_device", select_device, METH_VARARGS,
     "select_device(objective, workload, prices, measure): index of the device chosen"},
    {"select_record", select_record, METH_VARARGS,
     "select_record(results_json): stores a comparison's figures for select_device"},
    {"select_standard_workload", select_standard_workload, METH_NOARGS,
     "the standard workload's name in the measurement store"},
    {"energy_sample", energy_sample, METH_VARARGS,
     "energy_sample(index): the energy counter covering device N, or why there is none"},
    {"energy_joules", energy_joules, METH_VARARGS,
     "energy_joules(start, end): joules between two samples of energy_sample()"},
    {"compare_device_info", compare_device_info, METH_VARARGS,
     "compare_device_info(index): (backend, name) of device N"},
    {"compare_render", compare_render, METH_VARARGS,
     "compare_render(results_json, prices_json, kind): the comparison as json, table or html"},
    {NULL, NULL, 0, NULL},
};
