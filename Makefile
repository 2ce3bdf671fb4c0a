# make install: the static binary, gotrace(8) and the bash, zsh and fish
# completions under PREFIX (default /usr/local), staged under DESTDIR.
# make uninstall removes them again (same PREFIX and DESTDIR).
# make package: the Debian package bin/gotrace_VERSION_ARCH.deb.
# make test: the project's test command. hack/ holds the scripts; this
# file only names them.
PREFIX ?= /usr/local
DESTDIR ?=

.PHONY: install uninstall package test demo

install:
	PREFIX="$(PREFIX)" DESTDIR="$(DESTDIR)" hack/install.sh

package:
	hack/package.sh

test:
	hack/test.sh

demo:
	hack/demo.sh

uninstall:
	PREFIX="$(PREFIX)" DESTDIR="$(DESTDIR)" hack/install.sh --uninstall
