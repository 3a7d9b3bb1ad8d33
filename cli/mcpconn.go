package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The stdio transport of bd-claim mcp: newline-delimited JSON-RPC, as the
// SDK's IOTransport, but a line that is not a JSON-RPC message is answered
// with a JSON-RPC error (-32700 when it is not JSON, -32600 when it is but
// no message) and the session goes on; and when stdin ends, every call read
// before is answered before the session ends (a wait in progress is
// interrupted: see mcpServer.eof).

// maxLine is the longest line read as a message: the SDK's limit.
const maxLine = mcp.DefaultMaxLineLength

// line is one line of stdin; tooLong when it was longer than maxLine (its
// text is then cut).
type line struct {
	text    []byte
	tooLong bool
}

type lineConn struct {
	in       chan line // stdin's lines; closed at its end
	w        io.Writer
	wmu      sync.Mutex
	ended    func() // called when stdin ends
	log      *slog.Logger
	mu       sync.Mutex
	pending  map[jsonrpc.ID]bool // the calls read and not answered yet
	closed   bool                // Close was called
	answered chan struct{}       // a call was answered, or Close called (1-buffered)
	done     chan struct{}       // closed by Close
	close    sync.Once
}

// newLineConn reads r's lines until it ends, and writes messages to w.
func newLineConn(r io.Reader, w io.Writer, ended func(), log *slog.Logger) *lineConn {
	c := &lineConn{in: make(chan line), w: w, ended: ended, log: log, pending: map[jsonrpc.ID]bool{},
		answered: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		defer close(c.in)
		br := bufio.NewReader(r)
		for {
			l, err := readLine(br)
			if len(l.text) > 0 || l.tooLong {
				c.in <- l // once the connection is closed, the process ends: it need not return
			}
			if err != nil {
				return
			}
		}
	}()
	return c
}

// readLine reads one line of br, without its newline, cut at maxLine.
func readLine(br *bufio.Reader) (line, error) {
	var l line
	for {
		chunk, err := br.ReadSlice('\n')
		if room := maxLine - len(l.text); len(chunk) > room {
			l.tooLong = true
			chunk = chunk[:room]
		}
		l.text = append(l.text, chunk...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			l.text = bytes.TrimSpace(l.text)
			return l, err
		}
	}
}

// Read returns the next message of stdin. A line that is none is answered
// here. When stdin ends, it waits until every call read is answered (or
// the connection is closed), then says io.EOF. (The session closes the
// connection whenever it ends ctx.)
func (c *lineConn) Read(context.Context) (jsonrpc.Message, error) {
	for {
		select {
		case <-c.done:
			return nil, io.EOF
		case l, ok := <-c.in:
			if !ok {
				return nil, c.drain()
			}
			if msg := c.decode(l); msg != nil {
				return msg, nil
			}
		}
	}
}

// drain waits, once stdin has ended, for the answers of the calls read
// (or the connection's end).
func (c *lineConn) drain() error {
	c.ended()
	for {
		c.mu.Lock()
		n, closed := len(c.pending), c.closed
		c.mu.Unlock()
		if n == 0 || closed {
			return io.EOF
		}
		<-c.answered
	}
}

// decode reads one line as a message: a call is pending until its answer
// (or its cancellation, notifications/cancelled) is written. A line that is
// no message is answered with a JSON-RPC error, nil returned.
func (c *lineConn) decode(l line) jsonrpc.Message {
	id, code, why := json.RawMessage("null"), int64(jsonrpc.CodeParseError), "Parse error: the line is not JSON"
	switch {
	case l.tooLong:
		why = fmt.Sprintf("Parse error: the line is longer than %d bytes", maxLine)
	case json.Valid(l.text):
		msg, err := jsonrpc.DecodeMessage(l.text)
		if err == nil {
			c.track(msg)
			return msg
		}
		code, why = jsonrpc.CodeInvalidRequest, "Invalid Request: "+err.Error()
		var probe struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal(l.text, &probe) == nil && len(probe.ID) > 0 {
			id = probe.ID
		}
	}
	c.log.Warn("mcp_bad_message", "code", code, "message", why, "bytes", len(l.text))
	reply, _ := json.Marshal(struct { // strings and a number: it marshals
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}{"2.0", id, jsonrpc.Error{Code: code, Message: why}})
	_ = c.write(reply) // a failed write fails the next one too, which ends the session
	return nil
}

// track notes a call read, and forgets one the client cancelled.
func (c *lineConn) track(msg jsonrpc.Message) {
	req, ok := msg.(*jsonrpc.Request)
	switch {
	case !ok:
	case req.IsCall():
		c.mu.Lock()
		c.pending[req.ID] = true
		c.mu.Unlock()
	case req.Method == "notifications/cancelled":
		var p struct {
			RequestID any `json:"requestId"`
		}
		if json.Unmarshal(req.Params, &p) == nil {
			if id, err := jsonrpc.MakeID(p.RequestID); err == nil {
				c.answer(id)
			}
		}
	}
}

// answer notes that call id needs no answer any more.
func (c *lineConn) answer(id jsonrpc.ID) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
	c.signal()
}

// signal wakes drain up.
func (c *lineConn) signal() {
	select {
	case c.answered <- struct{}{}:
	default:
	}
}

func (c *lineConn) write(data []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.w.Write(append(data, '\n'))
	return err
}

// Write writes msg as one line; an answer ends its call's wait.
func (c *lineConn) Write(_ context.Context, msg jsonrpc.Message) error {
	data, err := jsonrpc.EncodeMessage(msg)
	if err == nil {
		err = c.write(data)
	}
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.answer(resp.ID)
	}
	return err
}

// Close ends Read.
func (c *lineConn) Close() error {
	c.close.Do(func() {
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
		close(c.done)
		c.signal()
	})
	return nil
}

func (c *lineConn) SessionID() string { return "" }

// connTransport is the transport of one connection.
type connTransport struct{ conn mcp.Connection }

func (t *connTransport) Connect(context.Context) (mcp.Connection, error) { return t.conn, nil }
