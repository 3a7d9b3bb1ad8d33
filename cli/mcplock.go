package cli

import (
	"cmp"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/bdclaim/bd-claim/claim"
)

// lockAgent makes sure that no other live bd-claim mcp of this machine
// serves the agent's name in the workspace: two sessions under one name
// would take each other's issues without noticing (a claim of an issue the
// agent holds succeeds; so does its release). It holds an exclusive flock
// on a file named after the workspace's database and the agent, in this
// user's runtime directory ($XDG_RUNTIME_DIR/bd-claim, else
// bd-claim-UID in the temporary directory), until unlock or the process's
// end. A lock that cannot be taken for another reason (no usable
// directory) is passed over: it guards against a mistake, the claims are
// safe without it.
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
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return func() {}, nil // passed over, see above
	}
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		holder, _ := os.ReadFile(name)
		f.Close()
		return nil, claim.Errorf(claim.EInvalid, "agent %s is served already by another bd-claim mcp in this workspace (pid %s): "+
			"two sessions under one name take each other's issues. Give each session its own name: add --unique to "+
			"bd-claim mcp's arguments (or a distinct --agent)", o.req.Agent, cmp.Or(strings.TrimSpace(string(holder)), "unknown"))
	}
	if err == nil {
		_ = f.Truncate(0)
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() { f.Close() }, nil
}
