# SPDX-License-Identifier: Apache-2.0
# The Python binding (python/): the C extension mooncake.store over the
# libmooncake of this build, with the pure-Python modules, built into
# $(O)/python (PYTHONPATH=$(O)/python imports it); tests/python runs it
# with pytest (tests/run.sh python).  `pip install --no-build-isolation
# ./python` builds the same from the source tree (python/setup.py).
#
#   python        build $(O)/python (part of test-build)
#   test-python   the pytest group against real daemons

PYTHON      ?= /usr/bin/python3
PY_SRCS     := $(wildcard python/src/*.c python/src/*.h python/mooncake/*.py) python/setup.py
PY_STAMP    := $(O)/python/.built

$(PY_STAMP): $(PY_SRCS) $(CLIENT_SO) $(PUBLIC_HEADERS)
	$(call msg,PYTHON,$(O)/python)
	@mkdir -p $(O)/python
	$(Q)cd python && MOONCAKE_BUILD=$(abspath $(O)) $(PYTHON) setup.py -q build \
		--build-base $(abspath $(O))/python-build --build-lib $(abspath $(O))/python \
		>$(abspath $(O))/python-build.log 2>&1 || { cat $(abspath $(O))/python-build.log; exit 1; }
	$(Q)touch $@

python: $(PY_STAMP)

# Not in sanitized builds: python3 does not load an instrumented libmooncake.
ifeq ($(SANITIZE),)
TEST_BINS += $(PY_STAMP)
endif

test-python: test-build
	$(Q)O=$(O) tests/run.sh python

.PHONY: python test-python
