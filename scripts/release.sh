#!/usr/bin/env bash
# Cuts a release of every module in the repository at one version.
#
#   scripts/release.sh vX.Y.Z              release: one commit, then tags
#   scripts/release.sh --dry-run [vX.Y.Z]  the same in a throw-away clone of
#                                          HEAD, then fetch every module from
#                                          a module proxy made of those tags
#
# A release is one commit in which every sub-module's go.mod requires the
# root module (and any sub-module it uses) at the new version instead of
# the zero pseudo-version or an older release, followed by one tag per
# module on that commit: vX.Y.Z for the root, <dir>/vX.Y.Z for the module
# in <dir> (the form the go command looks for). All tags name the same
# commit, so no tagged commit requires an untagged version, and pushing
# them together (the command is printed at the end) publishes a consistent
# set: the root first, then the sub-modules in dependency order.
#
# The replace directives stay: they point each sub-module at the checkout
# for local development and CI, and a user's build ignores them.
#
# The dry run is what CI runs (version: the newest release in CHANGELOG.md
# unless given). It makes the release commit and tags in a temporary clone
# of HEAD, builds a file-based module proxy from those tags (the zips the
# go command would download), and from a fresh module with no replace
# directive and an empty module cache it fetches every module at the new
# version and builds each library module's packages, the CLI and the
# example that is a module of its own. Nothing in the checkout changes.
set -euo pipefail

usage() {
	echo "usage: scripts/release.sh [--dry-run] vX.Y.Z" >&2
	exit 2
}

dry=false
version=""
for arg in "$@"; do
	case $arg in
	-n | --dry-run) dry=true ;;
	-h | --help) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	v*) [ -z "$version" ] || usage; version=$arg ;;
	*) usage ;;
	esac
done

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
rootmod=$(awk '$1 == "module" { print $2; exit }' go.mod)
zero=v0.0.0-00010101000000-000000000000

if [ -z "$version" ]; then
	$dry || usage
	version=v$(sed -n 's/^## \[\([0-9][^]]*\)\].*/\1/p' CHANGELOG.md | head -n 1)
	[ "$version" != v ] || { echo "release: CHANGELOG.md names no release" >&2; exit 1; }
fi
if ! [[ $version =~ ^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$ ]]; then
	echo "release: $version is not a semantic version vMAJOR.MINOR.PATCH[-PRE]" >&2
	exit 2
fi
if [ "${BASH_REMATCH[1]}" -ge 2 ]; then
	echo "release: $version needs a /v${BASH_REMATCH[1]} module path first" >&2
	exit 2
fi
if ! grep -q "^## \[${version#v}\]" CHANGELOG.md; then
	echo "release: CHANGELOG.md has no '## [${version#v}]' section" >&2
	exit 1
fi

# modules prints the directory of every module but the root, sub-modules
# before the modules that require them (a module's requirements on modules
# of this repository are counted; fewer first).
modules() {
	local d
	for d in $(git ls-files '*go.mod' | grep -v '^go.mod$' | xargs -n1 dirname); do
		printf '%d %s\n' "$(grep -c "^[[:space:]]*$rootmod[/ ]" "$d/go.mod" || true)" "$d"
	done | sort -n -k1,1 -k2,2 | awk '{ print $2 }'
}

# release makes the release commit and tags in the current directory.
release() {
	if [ -n "$(git status --porcelain)" ]; then
		echo "release: the work tree has uncommitted changes" >&2
		exit 1
	fi
	if git rev-parse -q --verify "refs/tags/$version" >/dev/null; then
		echo "release: tag $version exists" >&2
		exit 1
	fi
	local d m
	for d in $(modules); do
		# Every requirement on a module of this repository, at the new version.
		for m in $(go mod edit -json "$d/go.mod" | awk -F'"' -v r="$rootmod" \
			'$2 == "Path" && ($4 == r || index($4, r "/") == 1) { print $4 }' | sort -u); do
			[ "$m" = "$(awk '$1 == "module" { print $2; exit }' "$d/go.mod")" ] && continue
			go mod edit -require="$m@$version" "$d/go.mod"
		done
		(cd "$d" && go mod tidy)
	done
	if grep -l -- "$zero" $(git ls-files '*go.mod'); then
		echo "release: the go.mod files above still require the zero pseudo-version" >&2
		exit 1
	fi
	if ! $dry; then # the dry run builds every module from its proxy instead
		for d in . $(modules); do
			(cd "$d" && go build -o /dev/null ./...) # no binary left behind
		done
	fi
	git add -u # the go.mod and go.sum files, nothing untracked
	# Empty when the go.mod files already name $version: a dry run of the
	# release that is already tagged (CI on the release commit itself).
	git commit -q --allow-empty -m "release: $version" -m "Every sub-module requires the root (and the sub-modules it uses) at
$version; the tags $version and <dir>/$version name this commit."
	git tag -a "$version" -m "$rootmod $version"
	for d in $(modules); do
		git tag -a "$d/$version" -m "$rootmod/$d $version"
	done
}

# modpath prints the module path of the module in directory $1 at the tag.
modpath() { git show "$version:$1/go.mod" | awk '$1 == "module" { print $2; exit }'; }

# zipmodule writes the zip of the module in directory $1 at the tag to $2,
# laid out as the go command expects: every file of the module under
# "<path>@<version>/", without the directories of nested modules, with
# the repository's LICENSE when the module has none of its own.
zipmodule() {
	local dir=$1 out=$2 stage prefix nested
	stage=$(mktemp -d)
	prefix="$(modpath "$dir")@$version"
	mkdir -p "$stage/raw" "$(dirname "$stage/$prefix")"
	git archive "$version" -- "$dir" | tar -x -C "$stage/raw"
	if [ "$dir" = . ]; then mv "$stage/raw" "$stage/$prefix"; else mv "$stage/raw/$dir" "$stage/$prefix"; fi
	for nested in $(cd "$stage/$prefix" && find . -mindepth 2 -name go.mod -printf '%h\n'); do
		rm -rf "${stage:?}/$prefix/$nested"
	done
	[ -e "$stage/$prefix/LICENSE" ] || git show "$version:LICENSE" >"$stage/$prefix/LICENSE"
	(cd "$stage" && zip -qrX "$out" "$prefix")
	rm -rf "$stage"
}

# proxy writes a file-based module proxy (GOPROXY=file://...) serving every
# module at the tag.
proxy() {
	local dir=$1 d p
	for d in . $(modules); do
		p="$dir/$(modpath "$d")/@v"
		mkdir -p "$p"
		echo "$version" >"$p/list"
		printf '{"Version":"%s","Time":"%s"}\n' "$version" "$(git log -1 --format=%cI "$version")" >"$p/$version.info"
		git show "$version:$d/go.mod" >"$p/$version.mod"
		zipmodule "$d" "$p/$version.zip"
	done
}

if ! $dry; then
	release
	echo "release: tagged $version on $(git rev-parse --short HEAD). Publish with:"
	echo "  git push origin HEAD $version $(modules | sed "s|\$|/$version|" | tr '\n' ' ')"
	exit 0
fi

work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
echo "release: dry run of $version in a clone of $(git rev-parse --short HEAD)"
git clone -q --no-tags "$root" "$work/repo"
cd "$work/repo"
git config user.email release@localhost
git config user.name "release dry run"
release
echo "release: tagged $version and $(modules | wc -l) sub-modules in the clone"
proxy "$work/proxy"

# A user's module: no replace directive, an empty module cache; modules
# outside this repository come from the local cache, else the real proxy.
mkdir -p "$work/user"
cd "$work/user"
export GOMODCACHE="$work/modcache" GOFLAGS="-modcacherw -buildvcs=false" GONOSUMDB="$rootmod" GOWORK=off
export GOPROXY="file://$work/proxy,file://$(cd "$root" && go env GOMODCACHE)/cache/download,$(cd "$root" && go env GOPROXY)"
go mod init example.com/user >/dev/null 2>&1
for d in . $(cd "$work/repo" && modules); do
	if [ "$d" = . ]; then path=$rootmod; else path=$rootmod/$d; fi
	go mod download "$path@$version"
	case $d in
	bench | dashboard/browsertest) echo "release: fetched $path@$version (tests only)" ;;
	examples/*)
		# go install refuses a module with replace directives; a user copies
		# the example instead, as its README says: a copy without them builds.
		cp -R "$(go mod download -json "$path@$version" | awk -F'"' '$2 == "Dir" { print $4 }')" "$work/example"
		chmod -R u+w "$work/example"
		(
			cd "$work/example"
			for r in $(go mod edit -json | grep -A1 '"Old"' | awk -F'"' '$2 == "Path" { print $4 }'); do
				go mod edit -dropreplace="$r"
			done
			go mod tidy >"$work/get.log" 2>&1 || { cat "$work/get.log" >&2; exit 1; }
			go build ./...
		)
		rm -rf "$work/example"
		echo "release: fetched $path@$version and built a copy without its replace directives"
		;;
	*)
		go get "$path/...@$version" >"$work/get.log" 2>&1 || { cat "$work/get.log" >&2; exit 1; }
		go build "$path/..."
		echo "release: fetched and built $path@$version"
		;;
	esac
done
GOBIN="$work/bin" go install "$rootmod/cmd/redschema@$version"
"$work/bin/redschema" version
echo "release: dry run of $version passed"
