# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""The package as a user meets it: installed offline the way python/README.md
says, with what Debian ships (python3-setuptools, python3-wheel: no index); a
session taken by its name, as every ringkeeper command takes it; a directory
that is not a session refused, saying so.

    PYTHONPATH=python python3 -m unittest discover -s python/tests -v
"""
import os
import re
import shlex
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

import ringkeeper
from ringkeeper import FormatError

HERE = os.path.dirname(os.path.abspath(__file__))
PKG = os.path.dirname(HERE)  # python/


def sched_file(path, tid=101):
    """A sched buffer of one thread with two runs, from docs/format.md (as test_hostile)."""
    sys.path.insert(0, HERE)
    try:
        import test_hostile
    finally:
        sys.path.pop(0)
    with open(path, "wb") as f:
        f.write(test_hostile.make_buffer(test_hostile.sched_records(8, tid)))


class SessionByName(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="rk-py-")
        os.makedirs(os.path.join(self.root, "s", "sched"))
        sched_file(os.path.join(self.root, "s", "sched", "101"))

    def tearDown(self):
        shutil.rmtree(self.root)

    def test_a_name_is_a_session_under_the_root(self):
        by_path = ringkeeper.runs(os.path.join(self.root, "s"))
        self.assertGreater(len(by_path), 0)
        self.assertEqual(ringkeeper.runs("s", root=self.root), by_path)
        self.assertEqual(ringkeeper.open("s", root=self.root).name, "s")
        # The default root, as the commands': /dev/shm/ringkeeper unless told.
        old = ringkeeper.DEFAULT_ROOT
        ringkeeper.DEFAULT_ROOT = self.root
        try:
            self.assertEqual(ringkeeper.runs("s"), by_path)
        finally:
            ringkeeper.DEFAULT_ROOT = old
        with self.assertRaisesRegex(FileNotFoundError, "no session nosuch in "):
            ringkeeper.runs("nosuch", root=self.root)

    def test_the_command_line_takes_a_name_and_a_root(self):
        env = dict(os.environ, PYTHONPATH=PKG)
        out = subprocess.run([sys.executable, "-m", "ringkeeper", "threads", "--root",
                              self.root, "s"], env=env, capture_output=True, text=True,
                             cwd=self.root + "/s/sched")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("tid 101", out.stdout)
        out = subprocess.run([sys.executable, "-m", "ringkeeper", "runs", "--root",
                              self.root, "nosuch"], env=env, capture_output=True, text=True)
        self.assertEqual(out.returncode, 1)
        self.assertIn("no session nosuch in %s" % self.root, out.stderr)

    def test_an_empty_or_other_directory_is_no_session(self):
        empty = os.path.join(self.root, "empty")
        os.mkdir(empty)
        for d in (empty, os.path.join(self.root, "s", "sched")):
            with self.assertRaisesRegex(FormatError, "not a ringkeeper session: it has no "
                                        "sched directory"):
                ringkeeper.runs(d)
            with self.assertRaises(FormatError):
                ringkeeper.open(d)


def _has(py, *mods):
    # Found, not imported: pip and setuptools in one interpreter fight over distutils.
    code = ("import importlib.util, sys; sys.exit(not all(importlib.util.find_spec(m) "
            "for m in %r))" % (mods,))
    return subprocess.run([py, "-c", code], capture_output=True).returncode == 0


class OfflineInstall(unittest.TestCase):
    """python/README.md's install line, run with no index (as offline): it must
    not need PyPI. Into a temporary --target, from a copy of python/ (a build
    writes into its source directory)."""

    def install_line(self):
        with open(os.path.join(PKG, "README.md")) as f:
            for line in f:
                m = re.search(r"pip install (.*?)\./python\b", line)
                if m:
                    return shlex.split(m.group(1))
        self.fail("python/README.md has no 'pip install ... ./python' line")

    def test_the_documented_install_works_offline(self):
        args = self.install_line()
        pys = [p for p in (sys.executable, "/usr/bin/python3")
               if os.access(p, os.X_OK) and _has(p, "pip", "setuptools", "wheel")]
        if not pys:
            self.skipTest("no python3 here with pip, setuptools and wheel (Debian: "
                          "python3-pip python3-setuptools python3-wheel)")
        for py in pys:
            with self.subTest(python=py), tempfile.TemporaryDirectory() as d:
                src = os.path.join(d, "src")
                shutil.copytree(PKG, src, ignore=shutil.ignore_patterns(
                    "tests", "__pycache__", "build", "*.egg-info"))
                env = dict(os.environ, PIP_NO_INDEX="1", PIP_CONFIG_FILE=os.devnull,
                           PIP_DISABLE_PIP_VERSION_CHECK="1")
                env.pop("PYTHONPATH", None)
                r = subprocess.run([py, "-m", "pip", "install", "-q", *args, "--target",
                                    os.path.join(d, "t"), src], env=env,
                                   capture_output=True, text=True, timeout=120)
                self.assertEqual(r.returncode, 0, "%s: %s\n%s" % (py, args, r.stderr))
                env["PYTHONPATH"] = os.path.join(d, "t")
                r = subprocess.run([py, "-c", "import ringkeeper; print(ringkeeper.__file__)"],
                                   env=env, capture_output=True, text=True, cwd=d)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertTrue(r.stdout.startswith(os.path.join(d, "t")), r.stdout)


if __name__ == "__main__":
    unittest.main()
