#!/usr/bin/env bash
# make lint: clang-format in check mode over every C file named in the
# Makefile, and the functions this project never calls (style.md).
set -u
status=0
clang_format=${CLANG_FORMAT:-clang-format}
if ! "$clang_format" --dry-run --Werror "$@"; then
	echo "lint: clang-format would change the files above (run: clang-format -i FILE)" >&2
	status=1
fi
banned='\<(sprintf|vsprintf|strcpy|strcat|strncpy|strncat|strtok|atoi|atol|atoll|gets|system|popen)[[:space:]]*\('
if grep -nE "$banned" "$@" | grep -v 'lint: allow'; then
	echo "lint: banned function above (style.md: no sprintf strcpy strcat strncpy strtok atoi gets, no shell)" >&2
	status=1
fi
[ $status -eq 0 ] && echo "lint: clean ($# files)"
exit $status
