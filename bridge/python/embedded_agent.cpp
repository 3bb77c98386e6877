#include "bridge/python/embedded_agent.hpp"
#include "bridge/python/embedded_modules.hpp"

#include "protocol/json_text.hpp"

#include <pybind11/embed.h>

#include <cstddef>
#include <string_view>

namespace py = pybind11;

namespace hb::bridge {


namespace {

std::string& unavailable_reason() {
  static std::string reason; // set once, before any actor exists
  return reason;
}

py::object& adapter() {
  static py::object module; // lives until the process exits; never finalized
  return module;
}

// A Python exception as the wire reports it: class name and str(exc).
protocol::wire_error to_wire_error(const py::error_already_set& e) {
  std::string type = "RuntimeError";
  std::string message;
  try {
    type = py::str(e.type().attr("__name__"));
    message = py::str(e.value());
  } catch (...) {
    message = e.what();
  }
  return protocol::wire_error(type, message);
}

// Python's str may hold lone surrogates, which have no UTF-8 form.
std::string utf8_of(const py::handle& text) {
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(text.ptr(), &size);
  if (data)
    return std::string(data, static_cast<size_t>(size));
  PyErr_Clear();
  py::object cleaned = adapter().attr("clean_text")(text);
  return cleaned.cast<std::string>();
}

// The GIL is let go only to wait (rarely): other sessions' agents go on.
void wait_if_backlogged(turn_sink& s) {
  if (!s.backlogged())
    return;
  py::gil_scoped_release nogil;
  s.wait_for_room();
}

} // namespace

// The sink as Python sees it. Calls that wait drop the GIL so the agent's
// other threads (and other sessions) keep running.
PYBIND11_EMBEDDED_MODULE(hermes_bridge_native, m) {
  py::class_<turn_sink, std::shared_ptr<turn_sink>>(m, "Sink")
    // text and event only queue their output for the writer, with the GIL
    // held: handing it back and forth on every delta cost a third of the
    // daemon's CPU.
    //
    // text is the turn's stream_callback itself: str(text) of anything but
    // None, with no Python frame in between (it runs for every delta).
    .def("text", [](turn_sink& s, const py::handle& text) {
      if (text.is_none())
        return;
      s.delta(PyUnicode_Check(text.ptr()) ? utf8_of(text) : utf8_of(py::str(text)));
      wait_if_backlogged(s);
    })
    .def("event", [](turn_sink& s, const py::str& json) {
      s.event(utf8_of(json));
      wait_if_backlogged(s);
    })
    .def("ask_approval", [](turn_sink& s, const std::string& req, double timeout_s) {
      py::gil_scoped_release nogil;
      return s.ask_approval(req, timeout_s);
    })
    .def("ask_compression", [](turn_sink& s, const std::string& req, double timeout_s) {
      py::gil_scoped_release nogil;
      return s.ask_compression(req, timeout_s);
    })
    .def("ask_clarify", [](turn_sink& s, const std::string& req, double timeout_s) {
      py::gil_scoped_release nogil;
      return s.ask_clarify(req, timeout_s);
    })
    .def("gateway_notify", [](turn_sink& s, const std::string& req, double timeout_s) {
      py::gil_scoped_release nogil;
      s.gateway_notify(req, timeout_s);
    });
}

std::string python_runtime::version() {
  return std::to_string(PY_MAJOR_VERSION) + "." + std::to_string(PY_MINOR_VERSION);
}

std::string python_runtime::start(const std::string& agent_root, const std::string& hermes_home,
                                  const std::vector<std::string>& site_dirs) {
  PyConfig config;
  PyConfig_InitPythonConfig(&config);
  // Debian's interpreter, whatever python3 is first on PATH: subprocesses the
  // agent starts through sys.executable must find the same site-packages.
  PyConfig_SetString(&config, &config.program_name, L"/usr/bin/python3");
  PyConfig_SetString(&config, &config.executable, L"/usr/bin/python3");
  config.parse_argv = 0;
  config.install_signal_handlers = 0; // SIGINT/SIGTERM belong to the daemon
  new py::scoped_interpreter(&config); // deliberately never finalized
  try {
    auto sys = py::module_::import("sys");
    py::list path = sys.attr("path");
    if (py::len(path) > 0 && py::str(path[0]).cast<std::string>().empty())
      path.attr("pop")(0); // never import stray modules from the daemon's cwd
    if (!site_dirs.empty()) {
      // site.addsitedir also runs the directory's .pth files (editable
      // installs); what it appended then moves to the front.
      py::object site = py::module_::import("site");
      size_t before = py::len(path);
      for (const auto& dir : site_dirs)
        site.attr("addsitedir")(dir);
      py::list added = path[py::slice(static_cast<py::ssize_t>(before), static_cast<py::ssize_t>(py::len(path)), 1)];
      path.attr("__delitem__")(py::slice(static_cast<py::ssize_t>(before), static_cast<py::ssize_t>(py::len(path)), 1));
      for (py::ssize_t i = static_cast<py::ssize_t>(py::len(added)) - 1; i >= 0; --i)
        path.attr("insert")(0, added[static_cast<size_t>(i)]);
    }
    py::module_::import("hermes_bridge_native");
    py::object module_type = py::module_::import("types").attr("ModuleType");
    py::object builtins = py::module_::import("builtins");
    for (std::size_t i = 0; i < embedded_module_count; ++i) {
      const auto& m = embedded_modules[i];
      if (std::string_view(m.name).rfind("worker_", 0) == 0)
        continue; // the worker process's own modules (bridge/worker)
      py::object module = module_type(m.name);
      module.attr("__file__") = std::string("<hermes-bridge>/") + m.name + ".py";
      sys.attr("modules")[m.name] = module;
      // compile() with a file name, so tracebacks say where they came from.
      py::object code = builtins.attr("compile")(m.source, module.attr("__file__"), "exec");
      builtins.attr("exec")(code, module.attr("__dict__"));
      if (std::string_view(m.name) == "bridge_adapter")
        adapter() = module; // what the daemon calls
    }
    py::dict info = adapter().attr("configure")(agent_root, hermes_home);
    return py::str(info["agent_root"]);
  } catch (const py::error_already_set& e) {
    throw to_wire_error(e);
  }
}

std::string python_runtime::environment_json() {
  py::gil_scoped_acquire gil;
  try {
    py::object env = py::module_::import("bridge_profiles").attr("environment")();
    return py::module_::import("json").attr("dumps")(env).cast<std::string>();
  } catch (const py::error_already_set& e) {
    throw to_wire_error(e);
  }
}

void python_runtime::mark_unavailable(std::string reason) {
  unavailable_reason() = std::move(reason);
}

void python_runtime::release_main_thread() {
  PyEval_SaveThread(); // the GIL is taken per call from now on
}

struct agent_session::impl {
  py::object session;
};

agent_session::agent_session(std::unique_ptr<impl> p) : impl_(std::move(p)) {}

agent_session::~agent_session() {
  if (!impl_)
    return;
  py::gil_scoped_acquire gil;
  try {
    adapter().attr("release")(impl_->session);
  } catch (const py::error_already_set&) {
    // A failing close() must not take the daemon with it.
  }
  impl_->session = py::object();
}

std::shared_ptr<agent_session> agent_session::create(const std::string& session_id,
                                                     const std::string& profile,
                                                     const std::string& model,
                                                     const std::string& provider,
                                                     std::string& config_json) {
  if (!unavailable_reason().empty())
    throw protocol::runtime_error("embedded sessions are unavailable (this daemon serves native ones): " +
                                  unavailable_reason());
  py::gil_scoped_acquire gil;
  try {
    py::tuple made = adapter().attr("create_session")(session_id, profile, model, provider);
    auto p = std::make_unique<impl>();
    p->session = made[0];
    config_json = made[1].cast<std::string>();
    return std::shared_ptr<agent_session>(new agent_session(std::move(p)));
  } catch (const py::error_already_set& e) {
    throw to_wire_error(e);
  }
}

turn_outcome agent_session::run_turn(const std::shared_ptr<turn_sink>& sink,
                                     const std::string& request_json) {
  py::gil_scoped_acquire gil;
  turn_outcome out;
  try {
    // [status, result JSON or None, error or None, history JSON or None, message count]
    py::list parts = adapter().attr("run_turn")(impl_->session, sink, request_json);
    // Each JSON text is let go on the Python side as soon as it is copied.
    auto take = [&](size_t i) {
      py::object part = parts[i];
      parts[i] = py::none();
      return part;
    };
    out.status = utf8_of(take(0));
    if (py::object result = take(1); !result.is_none())
      out.result = utf8_of(result);
    if (py::object error = take(2); !error.is_none())
      out.error = utf8_of(error);
    if (py::object history = take(3); !history.is_none())
      out.history = utf8_of(history);
    out.message_count = take(4).cast<int64_t>();
  } catch (const py::error_already_set& e) {
    // run_turn catches everything itself; this is the adapter failing.
    auto err = to_wire_error(e);
    out = turn_outcome{};
    out.error = err.what();
    out.result = protocol::object_writer{}
                   .str("error", err.what())
                   .str("traceback", err.type + ": " + err.what())
                   .finish();
  } catch (const std::exception& e) {
    // An outcome of the wrong shape (pybind11's cast errors are C++ exceptions).
    out = turn_outcome{};
    out.error = std::string("hermes-bridge could not read the turn's outcome: ") + e.what();
    out.result = protocol::object_writer{}.str("error", *out.error).finish();
  }
  return out;
}

void agent_session::prepare_turn() {
  py::gil_scoped_acquire gil;
  try {
    adapter().attr("prepare_turn")(impl_->session);
  } catch (const py::error_already_set&) {
    // An agent without clear_interrupt() simply has nothing to clear.
  }
}

void agent_session::interrupt(const std::string& message_json) {
  py::gil_scoped_acquire gil;
  try {
    adapter().attr("interrupt")(impl_->session, message_json);
  } catch (const py::error_already_set& e) {
    throw to_wire_error(e);
  }
}

bool agent_session::steer(const std::string& text) {
  py::gil_scoped_acquire gil;
  try {
    return adapter().attr("steer")(impl_->session, text).cast<bool>();
  } catch (const py::error_already_set& e) {
    throw to_wire_error(e);
  }
}

std::string agent_session::call(const std::string& op, const std::string& args_json) {
  py::gil_scoped_acquire gil;
  try {
    return utf8_of(adapter().attr("session_call")(impl_->session, op, args_json));
  } catch (const py::error_already_set& e) {
    throw to_wire_error(e);
  }
}

std::string embedded_profiles::call(const std::string& profile, const std::string& op,
                                    const std::string& args_json) {
  if (!unavailable_reason().empty())
    throw protocol::runtime_error("embedded agents are unavailable (this daemon serves native sessions): " +
                                  unavailable_reason());
  py::gil_scoped_acquire gil;
  try {
    return utf8_of(adapter().attr("profile_call")(profile, op, args_json));
  } catch (const py::error_already_set& e) {
    throw to_wire_error(e);
  }
}

int embedded_resolve_gateway_approval(const std::string& session_id, const std::string& choice,
                                      const std::string& request_id, const std::string& token,
                                      const std::function<void(int, const std::string&)>& while_holding_gil) {
  py::gil_scoped_acquire gil;
  int released = 0;
  std::string failure;
  try {
    released = adapter().attr("resolve_gateway")(session_id, choice, request_id, token).cast<int>();
  } catch (const py::error_already_set& e) {
    auto err = to_wire_error(e);
    failure = err.type + ": " + err.what();
  }
  while_holding_gil(released, failure);
  return released;
}

} // namespace hb::bridge
