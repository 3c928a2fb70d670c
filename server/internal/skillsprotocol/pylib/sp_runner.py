"""Skills Protocol runner, started inside the sandbox by the runtime.

python3 -I -S /runtime/lib/sp_runner.py /runtime/run/request.json

It loads the requested Python file, calls its entrypoint with the args
object and writes one JSON document to the result channel (the original
stdout). Everything the code prints goes to stderr: the run's logs.
"""
import importlib.machinery
import json
import os
import sys

# Neither importlib.abc (it pulls in importlib.resources, pathlib, tempfile)
# nor importlib.util (contextlib): they were most of a run's start-up time.
# The import system only needs the methods.


def _file_spec(name, location, package):
    spec = importlib.machinery.ModuleSpec(name, importlib.machinery.SourceFileLoader(name, location), origin=location, is_package=package)
    spec.has_location = True
    if package:
        spec.submodule_search_locations = []
    return spec


def _load(spec):
    module = type(sys)(spec.name)
    module.__spec__, module.__loader__, module.__file__ = spec, spec.loader, spec.origin
    if spec.submodule_search_locations is not None:
        module.__path__ = spec.submodule_search_locations
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


class _Package:
    """An empty package: skills, skills.<namespace>, instruction skills."""

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        module.__path__ = []


class SkillsFinder:
    """Maps skills.<name> to the mounted bundle /skills/<name>/."""

    def __init__(self, skills):
        self.skills = skills  # name -> entrypoint path relative to the bundle, or None

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "skills" and not fullname.startswith("skills."):
            return None
        name = fullname[len("skills."):] if fullname != "skills" else ""
        entry = self.skills.get(name)
        if entry:
            location = "/skills/%s/%s" % (name, entry)
            return _file_spec(fullname, location, True)
        if name == "" or name in self.skills or any(s.startswith(name + ".") for s in self.skills):
            spec = importlib.machinery.ModuleSpec(fullname, _Package(), is_package=True)
            spec.submodule_search_locations = []
            return spec
        return None


def _error(kind, message):
    return {"ok": False, "error": {"type": kind, "message": message}}


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        req = json.load(f)
    result = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # prints become logs
    sys.path.insert(0, "/runtime/lib")
    for d in req.get("path") or []:
        sys.path.insert(0, d)
    sys.meta_path.insert(0, SkillsFinder(req.get("skills") or {}))
    doc = None
    try:
        module = _load(_file_spec("__skill_main__", req["file"], False))
        fn = getattr(module, req["entrypoint"], None)
        if not callable(fn):
            doc = _error("EntrypointNotFound", "%s defines no function %s(args)" % (req["display"], req["entrypoint"]))
        else:
            out = fn(req.get("args") or {})
            try:
                json.dumps(out)
                doc = {"ok": True, "output": out}
            except (TypeError, ValueError) as e:
                doc = _error("OutputNotSerializable", "the return value of %s() is not JSON-serializable: %s" % (req["entrypoint"], e))
    except SystemExit as e:
        doc = _error("SystemExit", "the code called sys.exit(%r) instead of returning" % (e.code,))
    except BaseException as e:  # the run reports every failure of the code
        import traceback

        traceback.print_exc()
        doc = _error(type(e).__name__, str(e) or type(e).__name__)
    try:
        sys.stdout.flush()
    except Exception:
        pass
    result.write(json.dumps(doc))
    result.close()


main()
