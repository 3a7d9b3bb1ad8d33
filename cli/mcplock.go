package cli

import (
	"cmp"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gofrs/flock"

	"github.com/bdclaim/bd-claim/claim"
)

// lockAgent makes sure that no other live bd-claim mcp of this machine
// serves the agent's name in the workspace: two sessions under one name
// would take each other's issues without noticing (a claim of an issue the
// agent holds succeeds; so does its release). It holds an exclusive lock
// (flock(2) on Unix, LockFileEx on Windows) on a file named after the
// workspace's database and the agent, in this user's runtime directory
// ($XDG_RUNTIME_DIR/bd-claim, else bd-claim-UID in the temporary
// directory), until unlock or the process's end, and writes its pid in a
// file beside it (Windows lets nobody else read a locked file). A lock
// that cannot be taken for another reason (no usable directory) is passed
// over: it guards against a mistake, the claims are safe without it.
func lockAgent(o *options) (unlock func(), err error) {
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("bd-claim-%d", os.Getuid()))
	if d := o.getenv("XDG_RUNTIME_DIR"); d != "" {
		dir = filepath.Join(d, "bd-claim")
	}
	db := o.ws.DBPath
	if !strings.Contains(db, "://") { // a file: every path to it is one workspace
		db, _ = filepath.Abs(db)
	}
	name := filepath.Join(dir, fmt.Sprintf("mcp-%x.lock", sha256.Sum256([]byte(db+"\x00"+o.req.Agent))))
	_ = os.Mkdir(dir, 0o700)
	l := flock.New(name, flock.SetFlag(os.O_RDWR|os.O_CREATE|noFollow), flock.SetPermissions(0o600))
	switch ok, err := l.TryLock(); {
	case err != nil:
		return func() {}, nil // passed over, see above
	case !ok:
		holder, _ := os.ReadFile(name + ".pid")
		return nil, claim.Errorf(claim.EInvalid, "agent %s is served already by another bd-claim mcp in this workspace (pid %s): "+
			"two sessions under one name take each other's issues. Give each session its own name: add --unique to "+
			"bd-claim mcp's arguments (or a distinct --agent)", o.req.Agent, cmp.Or(strings.TrimSpace(string(holder)), "unknown"))
	}
	if f, err := os.OpenFile(name+".pid", os.O_WRONLY|os.O_CREATE|os.O_TRUNC|noFollow, 0o600); err == nil {
		_, _ = f.WriteString(strconv.Itoa(os.Getpid()) + "\n")
		f.Close()
	}
	return func() { l.Close() }, nil
}
