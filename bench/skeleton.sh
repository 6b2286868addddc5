#!/usr/bin/env bash
# Issue 49's counts, for a tree at a git revision (default: the work tree): how many times each
# shared flag is declared in src/cli (one is the bar), how many places decide where a CSV goes
# (one: report::outputs::open_csv), how many CSV targets of another type than options::CsvTarget there
# are, and how many circles there are among the files of a module (bench/tools/circles.py; 0 is
# the bar, held by tests/layers.rs). Usage: bench/skeleton.sh [REV ...]; each REV is read from
# git into a temporary directory. Prints one Markdown table; nothing is built or run.
set -euo pipefail
cd "$(dirname "$0")/.."
revs=("$@")
[ ${#revs[@]} -eq 0 ] && revs=(WORKTREE)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
count() { # pattern dir
  { grep -rE --include='*.rs' -o "$1" "$2" 2>/dev/null || true; } | wc -l | tr -d ' '
}
echo "| revision | --force | --follow-symlinks | --csv | --no-csv | --json PATH | -T/--timeout | places choosing a CSV's path | other CSV target types | circles among files |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for rev in "${revs[@]}"; do
  if [ "$rev" = WORKTREE ]; then
    src=src
    name="work tree ($(git rev-parse --short HEAD)+)"
  else
    mkdir -p "$tmp/$rev"
    git archive "$rev" src | tar -x -C "$tmp/$rev"
    src="$tmp/$rev/src"
    name=$(git rev-parse --short "$rev")
  fi
  row="| $name"
  for flag in force follow-symlinks csv no-csv json timeout; do
    n=$(count "long = \"$flag\"" "$src/cli")
    # info --json is another flag (a bool: the report on stdout), not the PATH one.
    if [ "$flag" = json ]; then
      n=$((n - $({ grep -A1 'long = "json"' "$src/cli/info.rs" 2>/dev/null || true; } | grep -c 'pub json: bool' || true)))
    fi
    row="$row | $n"
  done
  # Where a CSV's path is chosen: the default name made (results/…-<time>.csv) or a CsvTarget
  # matched to open one.
  places=$({ grep -rlE --include='*.rs' 'create_default_csv\(|create_unique\(' "$src" || true; } | { grep -v '/report/outfile.rs' || true; } | wc -l | tr -d ' ')
  other=$(count 'Option<Option<PathBuf>>' "$src")
  circles=$(python3 bench/tools/circles.py "$src" | tail -1 | cut -d' ' -f1)
  echo "$row | $places | $other | $circles |"
done
