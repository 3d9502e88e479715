#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# The build's own promises: help, what `make` builds, the user's flags,
# install layout, the benchmark's output.
bats_require_minimum_version 1.5.0

load helpers

setup() {
	cd "$BATS_TEST_DIRNAME/../.."
	O=${MC_BUILD:-$PWD/.output}
}

@test "make help lists the targets" {
	run make -s help
	[ "$status" -eq 0 ]
	[[ "$output" == *"test "* ]]
	[[ "$output" == *"SANITIZE="* ]]
}

@test "make, make run and make install build what runs, no test binary" {
	for goal in all install; do
		run -0 make -n O="$BATS_TEST_TMPDIR/o" DESTDIR="$BATS_TEST_TMPDIR/d" "$goal"
		[[ "$output" == *"bin/mooncake-master"* ]]
		[[ "$output" == *"lib/libmooncake.so.0"* ]]
		[ -z "$(grep -n 'tests/' <<<"$output")" ]
	done
	run -0 make -n O="$BATS_TEST_TMPDIR/o" test-build
	[[ "$output" == *"tests/unit/test-meta"* ]]
	[[ "$output" == *"tests/tools/mc-load"* ]]
	# make run asks only for the build packages
	run -0 make -n run
	[[ "$output" == *"packaging/deps.sh run"* ]]
}

@test "CPPFLAGS, CFLAGS and LDFLAGS reach every compile and link line (as dpkg-buildflags passes them)" {
	run -0 make -n O="$BATS_TEST_TMPDIR/o" CPPFLAGS="-DMC_CPP_PROBE -D_FORTIFY_SOURCE=2" \
		CFLAGS="-O2 -fstack-protector-strong" LDFLAGS="-Wl,-z,relro -Wl,-z,now" all
	local compiles links
	output=$(sed -e :a -e '/\\$/N; s/\\\n//; ta' <<<"$output")	# join continued lines
	compiles=$(grep -E '^(cc|gcc|clang)\b.* -c -o [^ ]*\.o [^ ]*\.c$' <<<"$output" | grep -v -- '-target bpf')
	links=$(grep -E '^(cc|gcc|clang)\b.* -o [^ ]*/(bin/[^ ]*|lib/libmooncake\.so\.0) ' <<<"$output")
	[ "$(wc -l <<<"$compiles")" -gt 20 ]
	[ "$(wc -l <<<"$links")" -eq 5 ]
	[ -z "$(grep -v -- '-DMC_CPP_PROBE -D_FORTIFY_SOURCE=2 -O2 -fstack-protector-strong' <<<"$compiles")" ]
	[ -z "$(grep -v -- '-Wl,-z,relro -Wl,-z,now' <<<"$links")" ]
}

@test "make install honours DESTDIR and PREFIX" {
	dest="$BATS_TEST_TMPDIR/root"
	run make -s install O="$O" DESTDIR="$dest" PREFIX=/usr
	[ "$status" -eq 0 ]
	[ -f "$dest/usr/include/mooncake/error.h" ]
	[ -L "$dest/usr/lib/libmooncake.so" ]
	[ -f "$dest/usr/lib/libmooncake.so.0.1.0" ]
	grep -q '^prefix=/usr$' "$dest/usr/lib/pkgconfig/mooncake.pc"
	# The shared library exports the API and nothing internal.
	run nm -D --defined-only "$dest/usr/lib/libmooncake.so.0"
	[[ "$output" == *"mc_strerror"* ]]
	[ -z "$(grep ' T mc_offalloc_' <<<"$output")" ]
}

@test "a program builds against the installed library with pkg-config" {
	dest="$BATS_TEST_TMPDIR/root"
	make -s install O="$O" DESTDIR="$dest" PREFIX=/usr
	cat > "$BATS_TEST_TMPDIR/p.c" <<'C'
#include <stdio.h>
#include <mooncake/error.h>
#include <mooncake/version.h>
int main(void) { printf("%s %s\n", mc_version_string(), mc_error_name(-704)); return 0; }
C
	PKG_CONFIG_SYSROOT_DIR="$dest" PKG_CONFIG_PATH="$dest/usr/lib/pkgconfig" \
		cc -o "$BATS_TEST_TMPDIR/p" "$BATS_TEST_TMPDIR/p.c" \
		$(PKG_CONFIG_SYSROOT_DIR="$dest" PKG_CONFIG_PATH="$dest/usr/lib/pkgconfig" pkg-config --cflags --libs mooncake)
	run env LD_LIBRARY_PATH="$dest/usr/lib" "$BATS_TEST_TMPDIR/p"
	[ "$status" -eq 0 ]
	[ "$output" = "0.1.0 OBJECT_NOT_FOUND" ]
}

@test "the metadata benchmark runs and reports every figure" {
	run "$O/tests/bench/bench-meta" 20000 1 50
	[ "$status" -eq 0 ]
	for k in put_pairs_t1 get_t2 batch_get128_keys_t1 alloc_t2 bytes_per_object; do
		grep -Eq "^bench-meta $k [0-9.]+ " <<<"$output"
	done
}
