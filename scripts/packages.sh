# Sourced by the scripts that need Debian packages: install_missing LABEL PACKAGE... installs
# (apt-get, with sudo when not root) only the packages that are not installed yet.
install_missing() {
  local label=$1
  shift
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "$label: installing ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# What the tests need on top of what setup.sh installs for building and running ferrum (README,
# "Dependencies"). Used by test.sh and tsan.sh.
install_test_packages() {
  local packages=(
    libgtest-dev libgmock-dev # GoogleTest/CTest
    libcpp-httplib-dev        # HTTP client of the server tests
    xz-utils                  # the test fixtures are stored xz-compressed
    python3-jsonschema        # independent JSON Schema validator of the grammar tests
    libclang-rt-16-dev        # sanitizer runtimes (ASan/UBSan and TSan builds of test.sh, tsan.sh)
    llvm-16                   # llvm-symbolizer: source lines in sanitizer reports
    chromium                  # headless browser of the chat page's test (tests/server-node/webui_test.mjs)
  )
  # Node.js + npm run the OpenAI-client test (tests/server-node); any existing install will do.
  command -v node >/dev/null 2>&1 || packages+=(nodejs)
  command -v npm >/dev/null 2>&1 || packages+=(npm)
  install_missing test "${packages[@]}"
}
