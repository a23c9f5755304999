# torch_facts.py - what configure (m4/xcoll_torch.m4) needs to know about
# the torch a Python interpreter imports, on one line: version, C++ ABI,
# extension include dirs, library dirs (- for none), Python's headers,
# Python's version, and 1 for a Debian Python (dist-packages on sys.path).
import os
import sys
import sysconfig

import torch
from torch.utils import cpp_extension as ce

print(torch.__version__.split("+")[0],
      int(torch._C._GLIBCXX_USE_CXX11_ABI),
      ":".join(ce.include_paths()),
      ":".join(d for d in ce.library_paths() if os.path.isdir(d)) or "-",
      sysconfig.get_paths()["include"],
      "%d.%d" % sys.version_info[:2],
      int(any(p.endswith("dist-packages") for p in sys.path)))
