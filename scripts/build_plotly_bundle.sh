#!/usr/bin/env bash
# Builds static/vendor/plotly/plotly-gpuplatform.min.js: plotly.js with only the trace types the
# dashboards draw (dashboards/figures.py), instead of the 4.8 MB full bundle. Run by a developer
# when a figure needs another trace type or plotly.js is upgraded (needs node and npm; nothing is
# downloaded at run time: the output is committed). tests/dashboards/test_plotly_bundle.py fails
# when a figure uses a trace type the bundle lacks.
#
#   bash scripts/build_plotly_bundle.sh            # the traces and version below
#   TRACES="scatter bar heatmap pie" bash scripts/build_plotly_bundle.sh
set -euo pipefail
cd "$(dirname "$0")/.."

PLOTLY_VERSION="${PLOTLY_VERSION:-4.1.1}"   # the plotly.js the installed plotly.py ships
ESBUILD_VERSION="${ESBUILD_VERSION:-0.28}"
TRACES="${TRACES:-scatter bar heatmap}"
OUT=static/vendor/plotly/plotly-gpuplatform.min.js

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm init -y >/dev/null && npm install --silent --no-audit --no-fund \
    "plotly.js@$PLOTLY_VERSION" "esbuild@$ESBUILD_VERSION")

{
    echo "'use strict';"
    echo "var Plotly = require('plotly.js/lib/core');"
    echo "Plotly.register(["
    for trace in $TRACES; do echo "    require('plotly.js/lib/$trace'),"; done
    echo "]);"
    echo "module.exports = Plotly;"
} > "$work/entry.js"

# the options of plotly.js's own esbuild-config.js that matter for these traces
"$work/node_modules/.bin/esbuild" "$work/entry.js" --bundle --minify --format=iife \
    --global-name=Plotly --target=es2016 --define:global=window --define:define.amd=false \
    --define:process.env.NODE_DEBUG=false --log-level=warning --outfile="$work/bundle.js"

{
    printf '/* plotly.js v%s (MIT, LICENSE beside this file), partial bundle for gpuplatform.\n' \
        "$PLOTLY_VERSION"
    printf '   traces: %s\n   built by scripts/build_plotly_bundle.sh */\n' "$(echo $TRACES | tr ' ' ',')"
    cat "$work/bundle.js"
} > "$OUT"
cp "$work/node_modules/plotly.js/LICENSE" static/vendor/plotly/LICENSE
echo "$OUT: $(wc -c < "$OUT") bytes, traces: $TRACES"
