package api

import (
	"io"
	"net/http"
	"time"
)

// The server's ReadTimeout and WriteTimeout bound a whole request and a
// whole response, which suits ordinary calls and cuts long streams: an
// export, an import of a large file, a job long-poll. Those handlers take
// their deadlines over: each read or write that makes progress moves the
// deadline streamWindow ahead, so a stream lasts as long as it moves and
// a stalled peer is still dropped.

// streamWindow is how long a stream may go without progress.
const streamWindow = 60 * time.Second

// deadlineWriter moves the connection's write deadline ahead of each
// write, at most every window/4.
type deadlineWriter struct {
	w      io.Writer
	rc     *http.ResponseController
	window time.Duration
	next   time.Time // when the deadline needs moving again
}

func newDeadlineWriter(w io.Writer, rw http.ResponseWriter, window time.Duration) *deadlineWriter {
	d := &deadlineWriter{w: w, rc: http.NewResponseController(rw), window: window}
	d.extend(time.Now())
	return d
}

func (d *deadlineWriter) extend(now time.Time) {
	// ErrNotSupported (a recorder in tests, an HTTP/2 stream without
	// deadlines) leaves the server's own timeouts in force.
	_ = d.rc.SetWriteDeadline(now.Add(d.window))
	d.next = now.Add(d.window / 4)
}

func (d *deadlineWriter) Write(b []byte) (int, error) {
	if now := time.Now(); !now.Before(d.next) {
		d.extend(now)
	}
	return d.w.Write(b)
}

// deadlineReader is deadlineWriter for a request body. It moves the
// write deadline too: the answer goes out only after the whole body.
type deadlineReader struct {
	r      io.Reader
	rc     *http.ResponseController
	window time.Duration
	next   time.Time
}

func newDeadlineReader(r io.Reader, rw http.ResponseWriter, window time.Duration) *deadlineReader {
	d := &deadlineReader{r: r, rc: http.NewResponseController(rw), window: window}
	d.extend(time.Now())
	return d
}

func (d *deadlineReader) extend(now time.Time) {
	_ = d.rc.SetReadDeadline(now.Add(d.window))
	_ = d.rc.SetWriteDeadline(now.Add(d.window))
	d.next = now.Add(d.window / 4)
}

func (d *deadlineReader) Read(b []byte) (int, error) {
	if now := time.Now(); !now.Before(d.next) {
		d.extend(now)
	}
	return d.r.Read(b)
}
