# The chaos campaign's shared helpers (sourced by scripts/chaos.sh and its category files):
# results as an append-only event file, the one "run with a timeout and classify" function,
# content checksums that ignore wall-clock stamps, and temporary-file accounting.
# shellcheck shell=bash

# ---- results ------------------------------------------------------------------------------
# Every outcome is one line "CATEGORY<TAB>FORMAT<TAB>FIELD" in $EVENTS, appended by whichever
# process saw it (reader loops run in the background, the mount categories in a private mount
# namespace), so the table is counted once at the end. FIELD is runs, crashes, hangs, torn,
# lost, leftovers, failures or a note.

# note CATEGORY FORMAT FIELD [COUNT]
note() {
  local i
  for ((i = 0; i < ${4:-1}; i++)); do printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$EVENTS"; done
}

# skip CATEGORY FORMAT REASON: a row that could not run here, with the reason under the table.
skip() {
  printf '%s\t%s\tskipped\n' "$1" "$2" >>"$EVENTS"
  printf -- '- %s / %s skipped: %s\n' "$1" "$2" "$3" >>"$NOTES"
}

# finding CATEGORY FORMAT FIELD WHAT [ERRFILE]: counts FIELD and keeps WHAT (the command and
# what happened) with the head of its stderr for the report.
finding() {
  local cat=$1 fmt=$2 field=$3 what=$4 err=${5:-}
  note "$cat" "$fmt" "$field"
  {
    printf '### %s / %s: %s\n%s\n' "$cat" "$fmt" "$field" "$what"
    if [ -n "$err" ] && [ -s "$err" ]; then
      echo "stderr:"
      head -c 1500 "$err" | head -n 15 | sed 's/^/    /'
    fi
    echo
  } >>"$FINDINGS"
}

# ---- running ------------------------------------------------------------------------------
# Text on stderr that means the process did not end by its own error handling.
CRASH_TEXT='AddressSanitizer|UndefinedBehaviorSanitizer|LeakSanitizer|runtime error:|terminate called|std::bad_alloc|Assertion .* failed|core dumped|stack smashing|double free|corrupted size'

# run_cmd SECONDS OUT ERR CMD...: runs CMD with stdout/stderr to OUT/ERR under `timeout -k`
# (variables for CMD's environment go in the array RUN_ENV). Sets RC and HUNG (1 when the
# timeout ended it), RUN_OUT/RUN_ERR, and CMD_TEXT (the command as a shell line, for findings).
RUN_ENV=()
run_cmd() {
  local secs=$1 out=$2 err=$3 t0
  shift 3
  CMD_TEXT="$(printf '%q ' "${RUN_ENV[@]}" "$@")"
  RUN_OUT=$out RUN_ERR=$err
  t0=$SECONDS
  RC=0
  # (the group's own stderr is muted: bash reports a job killed by a signal there)
  { env "${RUN_ENV[@]}" timeout -k 5 "$secs" "$@" >"$out" 2>"$err"; } 2>/dev/null || RC=$?
  HUNG=0
  if [ "$RC" -eq 124 ] || { [ "$RC" -eq 137 ] && [ $((SECONDS - t0)) -ge "$secs" ]; }; then HUNG=1; fi
}

# classify CATEGORY FORMAT RC ERR [SIGNALS...]: counts a crash (an exit by a signal not in
# SIGNALS — the ones the campaign sent itself — or crash text on stderr) or a hang ($HUNG).
# Returns 0 when the process ended on its own terms (or by a signal the campaign sent).
classify() {
  local cat=$1 fmt=$2 rc=$3 err=$4 sig
  shift 4
  if [ "${HUNG:-0}" -eq 1 ]; then
    finding "$cat" "$fmt" hangs "$CMD_TEXT: no exit within its timeout" "$err"
    return 1
  fi
  if [ -s "$err" ] && grep -qE "$CRASH_TEXT" "$err"; then
    finding "$cat" "$fmt" crashes "$CMD_TEXT: exit $rc with crash text on stderr" "$err"
    return 1
  fi
  if [ "$rc" -ge 128 ]; then
    for sig in "$@"; do
      if [ "$rc" -eq $((128 + $(kill -l "$sig"))) ]; then return 0; fi
    done
    finding "$cat" "$fmt" crashes "$CMD_TEXT: killed by signal $((rc - 128)) ($(kill -l $((rc - 128)) 2>/dev/null))" "$err"
    return 1
  fi
  return 0
}

# expect_clean_error CATEGORY FORMAT PATTERN: after run_cmd, a run that had to fail must exit 1
# with a message matching PATTERN (extended regex, case-insensitive; on stderr, or on stdout
# for a verify report), never crash.
expect_clean_error() {
  local cat=$1 fmt=$2 pattern=$3
  note "$cat" "$fmt" runs
  classify "$cat" "$fmt" "$RC" "$RUN_ERR" || return 1
  # grep reads the files itself: `cat … | grep -q` fails under pipefail whenever grep matches
  # before cat has written everything (cat then dies of SIGPIPE), which load makes likely.
  if [ "$RC" -ne 1 ] || ! grep -qiE "$pattern" "$RUN_ERR" "$RUN_OUT"; then
    finding "$cat" "$fmt" failures "$CMD_TEXT: expected exit 1 with /$pattern/, got exit $RC" "$RUN_ERR"
    return 1
  fi
}

# ---- checksums ----------------------------------------------------------------------------
# Writers stamp wall-clock times into their outputs (history rows, commit stamps, cache
# fingerprints); the checksums mask 10-digit Unix times and ISO-8601 instants so that two
# complete runs of the same command compare equal, while any other byte still counts.

# Temporaries of writers (atomic files, staging directories, spill directories), as find(1)
# name tests.
TEMP_FIND=(\( -name '.*.tmp-*' -o -name '*.tmp-[0-9]*' -o -name '*.tmp[0-9]*' -o -name '.tessera-build-*' \))
is_temp_name() {
  case "$1" in
    .*.tmp-*|*.tmp-[0-9]*|*.tmp[0-9]*|.tessera-build-*) return 0 ;;
  esac
  return 1
}

# One Perl process per checksum (a shell pipeline per file costs too many processes on a
# loaded machine). Mode n: stamps masked; mode r (reader output): durations masked too.
# A directory hashes its files' relative names and contents, sorted, without lock files and
# writers' temporaries.
CHECKSUM_PL='
use strict; use warnings; use Digest::SHA; use File::Find;
my $mode = shift @ARGV;
my $stamp = qr/[0-9]{4}(?:[0-9]{6}(?:\.[0-9]+)?|-[0-9]{2}-[0-9]{2}T[0-9:]{8}(?:\.[0-9]+)?(?:Z|[+]00:00)?)/;
sub masked {
  my $d = shift;
  $d =~ s/$stamp/T/g;
  if ($mode eq "r") { $d =~ s/[0-9]+\.[0-9]+ ?s\b/Ts/g; $d =~ s/"elapsed[a-z_]*": *[0-9.e+-]+/"elapsed":T/g; }
  return $d;
}
# Stamps live in small files and in the footer of large ones: a file above 1 MiB is hashed as
# it is except for its last 64 KiB, which are masked.
sub file_sum {
  my $sha = Digest::SHA->new(256);
  open(my $h, "<:raw", $_[0]) or return "-";
  my $size = -s $h; my $tail = $size > 1048576 ? 65536 : $size; my $buf;
  my $left = $size - $tail;
  while ($left > 0) { my $n = read($h, $buf, $left > 4194304 ? 4194304 : $left); last unless $n; $sha->add($buf); $left -= $n; }
  local $/; $buf = <$h>; $sha->add(masked(defined $buf ? $buf : ""));
  return substr($sha->hexdigest, 0, 16);
}
sub temp { return $_[0] =~ /^\..*\.tmp-|\.tmp-[0-9]|\.tmp[0-9]|^\.tessera-build-/; }
for my $p (@ARGV) {
  if (-f $p) { print file_sum($p), "\n"; next; }
  if (!-d $p) { print "-\n"; next; }
  my %files;
  find({ no_chdir => 1, wanted => sub {
    my ($n) = $File::Find::name =~ m{([^/]*)$};
    if ($File::Find::name ne $p && temp($n)) { $File::Find::prune = 1; return; }
    $files{substr($File::Find::name, length($p))} = 1 if -f $File::Find::name && $n !~ /\.lock$/;
  } }, $p);
  my $all = "";
  $all .= "$_\0" . file_sum($p . $_) . "\n" for sort keys %files;
  print substr(Digest::SHA::sha256_hex($all), 0, 16), "\n";
}'

# nsum PATH: checksum of a file's bytes, or of a directory's files; "-" when PATH is missing.
nsum() { perl -e "$CHECKSUM_PL" n "$1"; }
# rsum FILE: a reader's output checksum, with durations ("in 0.0s") masked as well.
rsum() { perl -e "$CHECKSUM_PL" r "$1"; }

# temps_in DIR: how many writers' temporaries lie in DIR or below (a directory counts once).
temps_in() {
  if [ -d "$1" ]; then find "$1" -mindepth 1 "${TEMP_FIND[@]}" -prune -print 2>/dev/null | wc -l; else echo 0; fi
}

# remove_temps DIR: removes them, so the next run starts from the committed state only.
remove_temps() {
  if [ -d "$1" ]; then find "$1" -mindepth 1 "${TEMP_FIND[@]}" -prune -exec rm -rf {} + 2>/dev/null; fi
  return 0
}

# rand_delay MAX_SECONDS: a random delay in [0, MAX] with microsecond resolution, from bash's
# generator (seeded once by --seed), so a rerun with the same seed makes the same choices.
rand_delay() {
  local us
  us=$(( (RANDOM * 32768 + RANDOM) % ($(awk -v m="$1" 'BEGIN { printf "%d", m * 1000000 + 1 }')) ))
  printf '%d.%06d' $((us / 1000000)) $((us % 1000000))
}

# ---- the table ----------------------------------------------------------------------------
# print_table: the Markdown table of every row in the order rows first appeared; returns
# non-zero when any row has crashes, hangs, torn reads, lost files or failures.
print_table() {
  awk -F'\t' '
    { key = $1 "\t" $2; if (!(key in seen)) { seen[key] = 1; order[++n] = key } c[key, $3]++ }
    END {
      print "| category | format | runs | crashes | hangs | torn | lost | leftovers | failures |"
      print "|---|---|---:|---:|---:|---:|---:|---:|---:|"
      bad = 0
      for (i = 1; i <= n; i++) {
        k = order[i]; split(k, p, "\t")
        if (c[k, "skipped"] > 0 && c[k, "runs"] == 0) {
          printf "| %s | %s | skipped | | | | | | |\n", p[1], p[2]; continue
        }
        printf "| %s | %s | %d | %d | %d | %d | %d | %d | %d |\n", p[1], p[2], c[k, "runs"], c[k, "crashes"], \
          c[k, "hangs"], c[k, "torn"], c[k, "lost"], c[k, "leftovers"], c[k, "failures"]
        bad += c[k, "crashes"] + c[k, "hangs"] + c[k, "torn"] + c[k, "lost"] + c[k, "failures"]
        tot["runs"] += c[k, "runs"]; tot["crashes"] += c[k, "crashes"]; tot["hangs"] += c[k, "hangs"]
        tot["torn"] += c[k, "torn"]; tot["lost"] += c[k, "lost"]; tot["leftovers"] += c[k, "leftovers"]
        tot["failures"] += c[k, "failures"]
      }
      printf "| **total** | | %d | %d | %d | %d | %d | %d | %d |\n", tot["runs"], tot["crashes"], tot["hangs"], \
        tot["torn"], tot["lost"], tot["leftovers"], tot["failures"]
      exit bad > 0
    }' "$EVENTS"
}
