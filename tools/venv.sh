#!/usr/bin/env bash
# Make the project's Python virtual environment .venv (if missing or stale) with the packages
# of tools/requirements.txt, and print the path of its python on stdout (all else goes to
# stderr). Fast when already set up: a stamp file holds the requirements it was made with.
#
#   usage (from anywhere):  bash tools/venv.sh
#   e.g.  "$(bash tools/venv.sh)" tools/gen_trace.py /tmp/t --ranks 4 --pattern ring
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv=$root/.venv
py=$venv/bin/python
req=$root/tools/requirements.txt
stamp=$venv/.requirements.installed

ready() { [[ -x $py && -f $stamp ]] && cmp -s "$req" "$stamp" && "$py" -c 'import otf2' 2>/dev/null; }

if ! ready; then
    if ! "$py" -m pip --version >/dev/null 2>&1; then
        rm -rf "$venv" # missing, or left half-made (e.g. by a venv without ensurepip)
        if ! python3 -m venv "$venv" >&2; then
            # Debian's python3 needs python3-venv (ensurepip) for this.
            if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
                echo "tools/venv.sh: installing python3-venv" >&2
                rm -rf "$venv"
                DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >&2 ||
                    { apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >&2; }
                python3 -m venv "$venv" >&2
            else
                echo "tools/venv.sh: 'python3 -m venv' failed; install python3-venv (Debian) and retry" >&2
                exit 1
            fi
        fi
    fi
    "$py" -m pip install -q --disable-pip-version-check -r "$req" >&2
    "$py" -c 'import otf2' # fail here, loudly, rather than in the generator
    cp "$req" "$stamp"
fi
echo "$py"
