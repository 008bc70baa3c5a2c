# setup.py: records the source tree the package is installed from, so that
# sinter finds a library built there (build/libsinter.so) with no setting.
# Everything else is in pyproject.toml.
import os

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildPy(build_py):
    def run(self):
        super().run()
        src = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        out = os.path.join(self.build_lib, "sinter", "_where.py")
        with open(out, "w") as f:
            f.write("# written by setup.py at install time\nSOURCE_DIR = %r\n" % src)


setup(cmdclass={"build_py": BuildPy})
