// paleozoic._runtime.CallLog: the mock SDK's call log (cnml_mock.h) for Python, so a
// session built through the wrapper can be printed as direct SDK calls (codegen/raw.py).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cinttypes>
#include <cstdio>
#include <string>

#include <cnml_mock.h>

#include "paleozoic/runtime.h"

namespace py = pybind11;

namespace {

// One recording: started on construction / __enter__, stopped (and the log cleared) on
// close(), __exit__ or destruction, so a failed emission never leaves the SDK recording.
class CallLog {
 public:
  explicit CallLog(bool skip_compute) {
    const int flags = skip_compute ? CNML_MOCK_LOG_SKIP_COMPUTE : CNML_MOCK_LOG_COMPUTE;
    if (cnmlMockCallLogStart(flags) != CNML_STATUS_SUCCESS)
      throw pz::Error("CallLog: the mock SDK is already recording (one recording at a time)");
    active_ = true;
  }
  ~CallLog() { close(); }
  CallLog(const CallLog&) = delete;
  CallLog& operator=(const CallLog&) = delete;

  void close() {
    if (active_) cnmlMockCallLogStop();
    active_ = false;
  }

  void setScope(const std::string& scope) {
    checkActive();
    if (cnmlMockCallLogSetScope(scope.c_str()) != CNML_STATUS_SUCCESS)
      throw pz::Error("CallLog: cannot set the scope " + scope);
  }

  std::string take() {
    checkActive();
    const char* text = cnmlMockCallLogTake();
    if (text == nullptr) throw pz::Error("CallLog: out of memory reading the log");
    return text;
  }

 private:
  void checkActive() const {
    if (!active_) throw pz::Error("CallLog: the recording is closed");
  }
  bool active_ = false;
};

// Ops compiled on this thread while it is open leave their kernels' preparation to their
// first forward that computes (cnmlMockSetDeferredPreparation): for sessions only timed.
class DeferredPreparation {
 public:
  DeferredPreparation() = default;
  ~DeferredPreparation() { close(); }
  DeferredPreparation(const DeferredPreparation&) = delete;
  DeferredPreparation& operator=(const DeferredPreparation&) = delete;

  void open() {
    cnmlMockSetDeferredPreparation(1);
    active_ = true;
  }
  void close() {
    if (active_) cnmlMockSetDeferredPreparation(0);
    active_ = false;
  }

 private:
  bool active_ = false;
};

}  // namespace

void bindRecording(py::module_& m) {
  py::class_<DeferredPreparation>(
      m, "DeferredPreparation", py::module_local(),
      "While open (on this thread), compiled ops are checked and timed as usual but prepare "
      "their kernels at their first forward that computes: for sessions built to be timed "
      "with forwards that skip compute (CallLog(skip_compute=True)).")
      .def(py::init<>())
      .def("__enter__", [](DeferredPreparation& self) -> DeferredPreparation& {
        self.open();
        return self;
      }, py::return_value_policy::reference)
      .def("__exit__", [](DeferredPreparation& self, py::args) { self.close(); });
  py::class_<CallLog>(m, "CallLog", py::module_local(),
                      "Records the SDK calls made while it is open (mock SDK call log).")
      .def(py::init<bool>(), py::arg("skip_compute") = true,
           "Starts recording; with skip_compute, forwards are recorded but compute nothing.")
      .def("set_scope", &CallLog::setScope, py::arg("scope"),
           "Tags the following records (e.g. with the layer being built).")
      .def("take", &CallLog::take,
           "The records since the last take as JSON text, removed from the log.")
      .def("close", &CallLog::close, "Stops recording and clears the log.")
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](CallLog& log, py::args) { log.close(); });
  m.def(
      "data_digest",
      [](py::array_t<float, py::array::c_style | py::array::forcecast> data) {
        char text[24];
        std::snprintf(text, sizeof(text), "%016" PRIx64,
                      cnmlMockDataDigest(data.data(), static_cast<size_t>(data.nbytes())));
        return std::string(text);
      },
      py::arg("data"), "The digest the call log records for bound const data (float32 bytes).");
}
