// Command previewapp is the web app of the preview tests: a page that
// loads its script by absolute path, and a script that opens a WebSocket
// back to the page's host and shows what the server echoes. It listens on
// the address given as its only argument.
package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/coder/websocket"
)

const page = `<!doctype html>
<html><head><title>preview app</title><script src="/static/app.js"></script></head>
<body><p id="out">waiting</p></body></html>
`

const script = `window.addEventListener('load', () => {
  const ws = new WebSocket((location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/ws');
  ws.onopen = () => ws.send('ping');
  ws.onmessage = (e) => { document.getElementById('out').textContent = 'ws-answer:' + e.data; };
  ws.onerror = () => { document.getElementById('out').textContent = 'ws-error'; };
});
`

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: previewapp ADDR")
		os.Exit(2)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, page)
	})
	mux.HandleFunc("GET /static/app.js", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		fmt.Fprint(w, script)
	})
	mux.HandleFunc("GET /ws", func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
		if err != nil {
			return
		}
		defer c.CloseNow()
		ctx, cancel := context.WithTimeout(r.Context(), time.Minute)
		defer cancel()
		for {
			typ, b, err := c.Read(ctx)
			if err != nil {
				return
			}
			if err := c.Write(ctx, typ, append([]byte("pong:"), b...)); err != nil {
				return
			}
		}
	})
	if err := http.ListenAndServe(os.Args[1], mux); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
