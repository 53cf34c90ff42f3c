"""The fuzz smoke's triage of third-party faults (scripts/common.sh `fault_in_libhdf5`).

A libFuzzer run of the in-process h5ad target can stop inside libhdf5 on a damaged heap
(docs/compat.md D16). The triage must pass exactly those reports and nothing that stops in
tessera code. The reports below are shaped like the ones libFuzzer and AddressSanitizer print.
"""
import pathlib
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[2]

# A timeout while libhdf5 clears a local heap it read a huge size for: the frames above libhdf5
# are the alarm handler, a libc memset symbolized from glibc's sources and the allocator.
TIMEOUT_IN_LIBHDF5 = """\
ALARM: working on the last Unit for 21 seconds
==15790== ERROR: libFuzzer: timeout after 21 seconds
    #0 0x563a304901c1 in __sanitizer_print_stack_trace (/b/fuzz_cells_h5ad+0x2001c1)
    #1 0x563a30402b18 in fuzzer::PrintStackTrace() crtstuff.c
    #2 0x563a303e8319 in fuzzer::Fuzzer::AlarmCallback() crtstuff.c
    #3 0x7fe3cd38c04f  (/lib/x86_64-linux-gnu/libc.so.6+0x3c04f)
    #4 0x7fe3cd4be0a2 in __memset_avx512_unaligned_erms string/../sysdeps/x86_64/multiarch/memset-vec-unaligned-erms.S:218
    #5 0x563a30405cdb in __asan::Allocator::Allocate(unsigned long, unsigned long) crtstuff.c
    #6 0x563a30405683 in __asan::asan_malloc(unsigned long) crtstuff.c
    #7 0x563a3048613d in malloc (/b/fuzz_cells_h5ad+0x1f613d)
    #8 0x7fe3cd9233e4  (/lib/x86_64-linux-gnu/libhdf5_serial.so.103+0x1233e4)
    #9 0x7fe3cd92351c in H5FL_reg_malloc (/lib/x86_64-linux-gnu/libhdf5_serial.so.103+0x12351c)
    #10 0x563a3050b4dd in tessera::interop::Hdf5File::kind(std::string const&) const src/interop/hdf5_file.cpp:236:9
SUMMARY: libFuzzer: timeout
"""

# The same shape, but the memset runs for tessera code: a finding, never triaged away.
TIMEOUT_IN_TESSERA = TIMEOUT_IN_LIBHDF5.replace(
    "    #8 0x7fe3cd9233e4  (/lib/x86_64-linux-gnu/libhdf5_serial.so.103+0x1233e4)\n",
    "    #8 0x563a3050a000 in tessera::interop::read_indptr(long) src/interop/h5ad_source.cpp:88:5\n",
)

OVERFLOW_IN_TESSERA = """\
==1==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x602000000011
READ of size 1 at 0x602000000011 thread T0
    #0 0x55 in __asan_memcpy crtstuff.c
    #1 0x56 in tessera::cells::decode_tile(std::span<unsigned char const>) src/cells/tile.cpp:120:7
    #2 0x57 in H5Dread (/lib/x86_64-linux-gnu/libhdf5_serial.so.103+0x1)
SUMMARY: AddressSanitizer: heap-buffer-overflow
"""

# libhdf5 copying from a freed attribute message of a damaged object header: the top frame is the
# sanitizer's memcpy interceptor, called by libhdf5 (H5Aexists on a scanned h5ad).
USE_AFTER_FREE_IN_LIBHDF5 = """\
==30928==ERROR: AddressSanitizer: heap-use-after-free on address 0x611000010590 at pc 0x5559 bp 0x7ffc sp 0x7ffc
READ of size 98 at 0x611000010590 thread T0
    #0 0x555974725603 in __interceptor_memcpy (/b/fuzz_cells_h5ad+0x18e603)
    #1 0x7f7e2d990f18  (/lib/x86_64-linux-gnu/libhdf5_serial.so.103+0x190f18)
    #2 0x7f7e2d9b4ca4 in H5O__msg_iterate_real (/lib/x86_64-linux-gnu/libhdf5_serial.so.103+0x1b4ca4)
    #3 0x7f7e2d85c350 in H5Aexists (/lib/x86_64-linux-gnu/libhdf5_serial.so.103+0x5c350)
    #4 0x55a381d08713 in tessera::interop::h5::open_attribute(long, std::string const&) src/interop/hdf5_handle.cpp:131:7
SUMMARY: AddressSanitizer: heap-use-after-free in __interceptor_memcpy
"""

# The same read as a SEGV: glibc's memcpy (symbolized from its sources) under the interceptor.
SEGV_IN_LIBHDF5 = USE_AFTER_FREE_IN_LIBHDF5.replace(
    "    #0 0x555974725603 in __interceptor_memcpy",
    "    #0 0x7f7e2d4bd870 in __memcpy_avx512_unaligned_erms string/../sysdeps/x86_64/multiarch/memmove-vec-unaligned-erms.S:350\n"
    "    #0 0x555974725603 in __interceptor_memcpy",
)

# The interceptor called by tessera code: a finding.
USE_AFTER_FREE_IN_TESSERA = USE_AFTER_FREE_IN_LIBHDF5.replace(
    "    #1 0x7f7e2d990f18  (/lib/x86_64-linux-gnu/libhdf5_serial.so.103+0x190f18)\n",
    "    #1 0x563a3050a000 in tessera::interop::read_indptr(long) src/interop/h5ad_source.cpp:88:5\n",
)


def triaged_as_libhdf5(tmp_path, report):
    log = tmp_path / "fuzz.log"
    log.write_text(report)
    script = f'source "{ROOT}/scripts/common.sh"; fault_in_libhdf5 "{log}"'
    return subprocess.run(["bash", "-c", script], check=False).returncode == 0


def test_a_timeout_inside_libhdf5_is_the_known_fault(tmp_path):
    assert triaged_as_libhdf5(tmp_path, TIMEOUT_IN_LIBHDF5)


def test_a_timeout_in_tessera_code_is_a_finding(tmp_path):
    assert not triaged_as_libhdf5(tmp_path, TIMEOUT_IN_TESSERA)


def test_an_overflow_in_tessera_code_is_a_finding(tmp_path):
    assert not triaged_as_libhdf5(tmp_path, OVERFLOW_IN_TESSERA)


def test_a_log_without_a_report_is_not_triaged(tmp_path):
    assert not triaged_as_libhdf5(tmp_path, "#1000 DONE cov: 10 ft: 20\n")


def test_a_memcpy_interceptor_called_by_libhdf5_is_the_known_fault(tmp_path):
    assert triaged_as_libhdf5(tmp_path, USE_AFTER_FREE_IN_LIBHDF5)
    assert triaged_as_libhdf5(tmp_path, SEGV_IN_LIBHDF5)


def test_a_memcpy_interceptor_called_by_tessera_is_a_finding(tmp_path):
    assert not triaged_as_libhdf5(tmp_path, USE_AFTER_FREE_IN_TESSERA)
