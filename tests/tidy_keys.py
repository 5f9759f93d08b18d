"""The cache keys of tests/tidy.sh: one per source file, a hash of what
clang-tidy's verdict on it depends on.

stdin: `ninja -t deps` of the build (an object's line, then its
dependencies indented, the source first). Arguments: the repository root,
the build directory, clang-tidy's version, the files (relative to the root). Prints
`file<TAB>key` for every file whose dependencies the build knows and are up
to date. The key covers the version, .clang-tidy, tests/tidy.sh, and every
dependency: a file in the repository by its content, a system header by its
size and modification time.
"""
import hashlib
import os
import sys


def read_deps(lines):
    """source path -> its dependencies, for objects whose list is VALID."""
    deps, current = {}, None
    for line in lines:
        if not line.strip():
            continue
        if not line.startswith(" "):  # "obj.o: #deps N, deps mtime M (VALID|STALE)"
            current = [] if line.rstrip().endswith("(VALID)") else None
            continue
        if current is None:
            continue
        if not current:  # the first dependency is the source itself
            current = deps.setdefault(line.strip(), [])
            current.append(line.strip())
            continue
        current.append(line.strip())
    return deps


def main():
    root, build, version, files = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    build = os.path.abspath(build)
    # Paths are relative to the build directory when the compiler was given
    # relative ones (ccache's base_dir does that).
    deps = {
        os.path.normpath(os.path.join(build, src)): [
            os.path.normpath(os.path.join(build, d)) for d in ds
        ]
        for src, ds in read_deps(sys.stdin).items()
    }
    stamps = {}

    def name(path):
        """A dependency's name without where the checkout and the build are,
        so another clone or build directory of the same code has the same key."""
        full = os.path.abspath(path)
        if full.startswith(build + os.sep):
            return "<build>/" + os.path.relpath(full, build)
        if full.startswith(root + os.sep):
            return os.path.relpath(full, root)
        return full

    def stamp(path):
        if path not in stamps:
            try:
                if os.path.abspath(path).startswith(root + os.sep):
                    with open(path, "rb") as f:
                        stamps[path] = hashlib.sha256(f.read()).hexdigest()
                else:
                    st = os.stat(path)
                    stamps[path] = f"{st.st_size}:{st.st_mtime_ns}"
            except OSError:
                stamps[path] = "missing"
        return stamps[path]

    base = hashlib.sha256(version.encode())
    for own in (".clang-tidy", "tests/tidy.sh", "tests/tidy_keys.py"):
        base.update(stamp(os.path.join(root, own)).encode())
    for rel in files:
        source = os.path.join(root, rel)
        if source not in deps:
            continue
        h = base.copy()
        for dep in sorted(set(deps[source]), key=name):
            h.update(name(dep).encode() + b"\0" + stamp(dep).encode() + b"\n")
        print(f"{rel}\t{h.hexdigest()}")


if __name__ == "__main__":
    main()
