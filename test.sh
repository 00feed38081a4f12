#!/usr/bin/env bash
# Runs the whole test suite, installing what the tests need first.
# Usage: ./test.sh [go test flags...]   (e.g. ./test.sh -run TestScripts ./loop)
set -euo pipefail
cd "$(dirname "$0")"

# apt_install installs Debian packages, as root or through sudo.
apt_install() {
	local sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	if [ -z "${apt_updated:-}" ]; then
		$sudo apt-get update -qq
		apt_updated=1
	fi
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$@"
}

# The race detector needs cgo, so a C compiler.
command -v gcc >/dev/null || apt_install gcc libc6-dev
# The sandbox tests run hostile candidates under bubblewrap (rlimits set by
# util-linux prlimit), as Python scripts and pytest runs.
[ -x /usr/bin/bwrap ] && [ -x /usr/bin/prlimit ] && /usr/bin/python3 -c 'import pytest' 2>/dev/null ||
	apt_install bubblewrap util-linux python3 python3-pytest

# The workspace tools read .gitignore files as git does; their test asks git.
command -v git >/dev/null || apt_install git

# The MCP tests run the reference servers from npm, installed (pinned) into
# .cache/npm, which git ignores; tool/mcp's tests look for them there.
command -v node >/dev/null && command -v npm >/dev/null || apt_install nodejs npm
mcp_servers=(@modelcontextprotocol/server-everything@2026.8.31 @modelcontextprotocol/server-filesystem@2026.8.31)
mcp_installed() {
	local spec pkg ver
	for spec in "${mcp_servers[@]}"; do
		pkg=${spec%@*} ver=${spec##*@}
		grep -qs "\"version\": \"$ver\"" ".cache/npm/node_modules/$pkg/package.json" || return 1
	done
}
mcp_installed || npm install --prefix .cache/npm --no-audit --no-fund --loglevel=error "${mcp_servers[@]}"
# The eval HTML reports are rendered in headless Chromium.
[ -x /usr/bin/chromium ] || apt_install chromium
# The telemetry tests export to a real Jaeger (v2 all-in-one), built from the
# Go module proxy once per machine into the tools cache, outside the clone
# (about 3 minutes; internal/testenv.JaegerVersion names the same version).
jaeger_version=v1.76.0
jaeger_bin="$HOME/.cache/ratchet/tools/jaeger-$jaeger_version/jaeger"
if [ ! -x "$jaeger_bin" ]; then
	echo "== building Jaeger $jaeger_version into $jaeger_bin"
	jaeger_tools=$(mktemp -d)
	mkdir -p "$(dirname "$jaeger_bin")"
	(
		cd "$jaeger_tools"
		go mod init ratchet-tools >/dev/null 2>&1
		go get -tool "github.com/jaegertracing/jaeger/cmd/jaeger@$jaeger_version"
		go build -o "$jaeger_bin.tmp" github.com/jaegertracing/jaeger/cmd/jaeger
	)
	mv "$jaeger_bin.tmp" "$jaeger_bin"
	rm -rf "$jaeger_tools"
fi
# The CLI's terminal tests run it in tmux.
command -v tmux >/dev/null || apt_install tmux

# The Temporal tests run the CLI's dev server. It is built once per machine
# into the tools cache (about 3 minutes); internal/testenv looks for it there.
temporal_version=v1.5.1
temporal_dir="$HOME/.cache/ratchet/tools/temporal-$temporal_version"
[ -x "$temporal_dir/temporal" ] ||
	GOBIN="$temporal_dir" go install "github.com/temporalio/cli/cmd/temporal@$temporal_version"

go version

# With -race, vet's compiles of the dependencies are the ones the tests use.
echo "== go vet"
go vet -race ./...

echo "== staticcheck"
go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
	echo "gofmt would change:" $unformatted
	exit 1
fi

# The PostgreSQL store's tests need a server: a throwaway cluster, unless
# RATCHET_TEST_POSTGRES_DSN already names one.
if [ -z "${RATCHET_TEST_POSTGRES_DSN:-}" ]; then
	. .ci/postgres.sh
	trap stop_postgres EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	start_postgres
fi

echo "== go test -race"
if [ $# -gt 0 ]; then
	go test -race "$@"
else
	go test -race -count=1 ./...
fi

# fuzz_one fuzzes target $2 of package $1 for 3 s. Go 1.26's fuzz
# coordinator can fail a target with a bare "context deadline exceeded" as
# -fuzztime ends, no input having failed (golang/go#75804, fixed in 1.27):
# only that failure, with no failing input written, is fuzzed again, once.
fuzz_one() {
	local out
	if out=$(go test -run '^$' -fuzz "^$2\$" -fuzztime 3s "$1" 2>&1); then
		printf '%s\n' "$out"
		return
	fi
	printf '%s\n' "$out"
	if ! grep -qx '    context deadline exceeded' <<<"$out" || grep -q 'Failing input written' <<<"$out"; then
		return 1
	fi
	echo "== $1 $2: the fuzz coordinator's deadline race (golang/go#75804), no failing input: again"
	go test -run '^$' -fuzz "^$2\$" -fuzztime 3s "$1"
}

if [ $# -eq 0 ]; then
	# Fuzzers of what hostile text meets (model replies and streams, tool
	# output, test reports, the judge's wire, candidate source, the
	# terminal), a few seconds each beyond their seeds.
	echo "== go test -fuzz"
	for target in \
		./model/anthropic:FuzzAssemble ./model/openai:FuzzAssemble ./model/openai:FuzzAssembleResponses \
		./model/gemini:FuzzAssemble ./model/retry:FuzzRetryAfter ./tool:FuzzTypedCheck ./progress:FuzzCanonical \
		./model/cache:FuzzDecodeReply ./tool:FuzzTrim ./tool:FuzzExecutorArgs ./tool/command:FuzzRender \
		./verify/testreport:FuzzParseJUnitXML ./verify/testreport:FuzzParseGoTestJSON ./verify/testreport:FuzzParseTAP \
		./verify/judge:FuzzDecodeReply ./verify/judge:FuzzPlanGo ./observe:FuzzPrinter ./redact:FuzzString; do
		fuzz_one "${target%%:*}" "${target#*:}"
	done
fi
