# shellcheck shell=bash
# Source me (". scripts/bd-env.sh") to run the real bd safely from a test:
# a throwaway HOME, no daemon, no pager/colour, fixed actor, git identity, UTC.
# Clean up with: rm -rf "$BD_ENV_HOME"
# bd_workspace DIR [PREFIX] then makes DIR a git repo with an initialised .beads/
# (needs $BD, the path printed by scripts/build-bd.sh).

# Keep Go's caches and settings where they were: they default to paths under $HOME.
if command -v go >/dev/null 2>&1; then
    { read -r GOPATH; read -r GOCACHE; read -r GOMODCACHE; read -r GOENV; } \
        < <(go env GOPATH GOCACHE GOMODCACHE GOENV)
    export GOPATH GOCACHE GOMODCACHE GOENV
fi
# bd compiles its WASM SQLite into $XDG_CACHE_HOME/beads/wasm (~0.7 s on a cold cache);
# share that cache between tests (wazero writes it atomically).
export XDG_CACHE_HOME=${BD_CACHE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.bin/cache}

BD_ENV_HOME=$(mktemp -d "${TMPDIR:-/tmp}/bd-home.XXXXXX")
export BD_ENV_HOME HOME=$BD_ENV_HOME TZ=UTC
export BEADS_NO_DAEMON=1 BEADS_AUTO_START_DAEMON=false
export BD_ACTOR=${BD_ACTOR:-bd-test}
export BD_NO_PAGER=1 NO_COLOR=1
export GIT_AUTHOR_NAME=bd-test GIT_AUTHOR_EMAIL=bd-test@example.invalid
export GIT_COMMITTER_NAME=bd-test GIT_COMMITTER_EMAIL=bd-test@example.invalid
export GIT_CONFIG_NOSYSTEM=1
# Nothing from the caller may point bd at another database.
unset BD_DB BEADS_DIR BEADS_DB BEADS_JSONL BD_SOCKET BEADS_SYNC_BRANCH GT_ROOT
# In the throwaway ~/.gitconfig: identity, and beads.role (else bd warns on stderr).
git config --global user.name bd-test
git config --global user.email bd-test@example.invalid
git config --global beads.role maintainer
git config --global init.defaultBranch main

bd_workspace() { # DIR [PREFIX]
    mkdir -p "$1" &&
        git -C "$1" init -q &&
        (cd "$1" && "${BD:?set BD to the bd binary}" init --prefix "${2:-bt}" --quiet \
            --skip-hooks --skip-merge-driver </dev/null)
}
