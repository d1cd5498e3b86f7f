"""A minimal in-tree PEP 517 / PEP 660 build backend for the rlstore binding.

The package is pure Python, so a wheel is a zip of rlstore/ plus its
.dist-info; this backend writes one with the standard library only, which
keeps `pip install ./bindings/python` working without network access (no
setuptools download into the isolated build environment).

Hooks: build_wheel, build_sdist, build_editable (pip install -e), and the
get_requires_* hooks (nothing is required).
"""

import base64
import hashlib
import io
import os
import re
import tarfile
import time
import zipfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "rlstore"


def _project():
    """The [project] table of pyproject.toml (the fields this backend uses)."""
    path = os.path.join(HERE, "pyproject.toml")
    try:
        import tomllib  # Python 3.11+
        with open(path, "rb") as f:
            return tomllib.load(f)["project"]
    except ImportError:
        pass
    # Older Pythons: the simple `key = "value"` lines of [project].
    proj, section = {}, None
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = re.match(r"^\[(.*)\]\s*$", line)
            if m:
                section = m.group(1)
                continue
            m = re.match(r'^(\w[\w-]*)\s*=\s*"(.*)"\s*$', line)
            if section == "project" and m:
                proj[m.group(1)] = m.group(2)
    return proj


def _metadata():
    p = _project()
    lines = [
        "Metadata-Version: 2.1",
        "Name: %s" % p["name"],
        "Version: %s" % p["version"],
        "Summary: %s" % p.get("description", ""),
    ]
    if "requires-python" in p:
        lines.append("Requires-Python: %s" % p["requires-python"])
    for c in p.get("classifiers", []) if isinstance(p.get("classifiers"), list) else []:
        lines.append("Classifier: %s" % c)
    readme = os.path.join(HERE, "README.md")
    body = ""
    if os.path.exists(readme):
        lines.append("Description-Content-Type: text/markdown")
        with open(readme, encoding="utf-8") as f:
            body = "\n" + f.read()
    return p["name"], p["version"], "\n".join(lines) + "\n" + body


def _package_files():
    root = os.path.join(HERE, PACKAGE)
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for fn in sorted(filenames):
            if fn.endswith((".pyc", ".pyo")):
                continue
            full = os.path.join(dirpath, fn)
            yield full, os.path.relpath(full, HERE).replace(os.sep, "/")


def _record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (arcname, digest, len(data))


def _write_wheel(wheel_directory, files):
    """files: list of (arcname, bytes).  Returns the wheel's file name."""
    name, version, metadata = _metadata()
    dist_info = "%s-%s.dist-info" % (name, version)
    files = list(files) + [
        (dist_info + "/METADATA", metadata.encode()),
        (dist_info + "/WHEEL", b"Wheel-Version: 1.0\nGenerator: rlstore_build\n"
                               b"Root-Is-Purelib: true\nTag: py3-none-any\n"),
    ]
    record = [_record_line(a, d) for a, d in files] + [dist_info + "/RECORD,,"]
    files.append((dist_info + "/RECORD", ("\n".join(record) + "\n").encode()))
    wheel_name = "%s-%s-py3-none-any.whl" % (name, version)
    stamp = time.gmtime(int(os.environ.get("SOURCE_DATE_EPOCH", "315532800")))[:6]
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel_name), "w",
                         zipfile.ZIP_DEFLATED) as z:
        for arcname, data in files:
            info = zipfile.ZipInfo(arcname, stamp)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return wheel_name


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    files = []
    for full, arcname in _package_files():
        with open(full, "rb") as f:
            files.append((arcname, f.read()))
    return _write_wheel(wheel_directory, files)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """A wheel holding only a .pth file that puts the source tree on sys.path."""
    return _write_wheel(wheel_directory, [("_rlstore_editable.pth", (HERE + "\n").encode())])


def build_sdist(sdist_directory, config_settings=None):
    name, version, metadata = _metadata()
    base = "%s-%s" % (name, version)
    sdist_name = base + ".tar.gz"
    members = [os.path.join(HERE, n) for n in ("pyproject.toml", "README.md")]
    members += [full for full, _ in _package_files()]
    for dirpath, dirnames, filenames in os.walk(os.path.join(HERE, "_build")):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        members += [os.path.join(dirpath, fn) for fn in filenames if fn.endswith(".py")]
    with tarfile.open(os.path.join(sdist_directory, sdist_name), "w:gz") as t:
        for full in members:
            if os.path.exists(full):
                t.add(full, arcname=base + "/" + os.path.relpath(full, HERE))
        info = tarfile.TarInfo(base + "/PKG-INFO")
        data = metadata.encode()
        info.size = len(data)
        info.mode = 0o644
        t.addfile(info, io.BytesIO(data))
    return sdist_name
