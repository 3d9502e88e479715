# SPDX-License-Identifier: Apache-2.0
"""`pip install --no-build-isolation ./python` into a fresh venv, offline
(--no-index), builds the extension against this build's libmooncake, and
the installed package imports and talks to the cluster."""
import os
import subprocess
import sys

from conftest import BUILD, TOP


def test_pip_install_into_venv(cluster, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    env = dict(os.environ, MOONCAKE_BUILD=BUILD, PIP_NO_INDEX="1",
               PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.pop("PYTHONPATH", None)
    r = subprocess.run([py, "-m", "pip", "install", "-q", "--no-build-isolation",
                        os.path.join(TOP, "python")], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    code = ("import sys, mooncake.store as m, mooncake.async_store\n"
            "s = m.MooncakeDistributedStore()\n"
            "assert s.setup('localhost', 'P2PHANDSHAKE', 0, 1 << 20, 'tcp', '', sys.argv[1],"
            " tenant_id='t-install') == 0\n"
            "assert s.put('installed', b'yes') == 0 and s.get('installed') == b'yes'\n"
            "assert s.remove_all(force=True) == 1\n"
            "print(m.__file__)\n")
    r = subprocess.run([py, "-c", code, cluster.rpc], env=env, capture_output=True, text=True,
                       cwd=str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith(str(venv))
