// Command previewapp is the web app of the preview tests: a page that
// loads its script by absolute path, and a script that opens a WebSocket
// back to the page's host and shows what the server echoes; an image the
// script adds is answered only once that WebSocket was, so the page's
// load event comes after the answer. It listens on the address given as
// its only argument.
package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/coder/websocket"
)

const page = `<!doctype html>
<html><head><title>preview app</title><script src="/static/app.js"></script></head>
<body><p id="out">waiting</p></body></html>
`

const script = `// The image holds the page's load event (which headless Chromium's
// --dump-dom waits for) until this page's WebSocket was answered.
const nonce = String(Math.random()).slice(2);
document.write('<img src="/static/after-ws.svg?n=' + nonce + '" alt="">');
const ws = new WebSocket((location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/ws?n=' + nonce);
const show = (text) => {
  const put = () => { document.getElementById('out').textContent = text; };
  if (document.readyState === 'loading') { addEventListener('DOMContentLoaded', put); } else { put(); }
};
ws.onopen = () => ws.send('ping');
ws.onmessage = (e) => show('ws-answer:' + e.data);
ws.onerror = () => show('ws-error');
`

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: previewapp ADDR")
		os.Exit(2)
	}
	var mu sync.Mutex
	answered := map[string]chan struct{}{} // nonce → closed once its WebSocket was answered
	nonce := func(n string) chan struct{} {
		mu.Lock()
		defer mu.Unlock()
		if answered[n] == nil {
			answered[n] = make(chan struct{})
		}
		return answered[n]
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /static/after-ws.svg", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-nonce(r.URL.Query().Get("n")):
		case <-time.After(15 * time.Second):
		case <-r.Context().Done():
		}
		w.Header().Set("Content-Type", "image/svg+xml")
		fmt.Fprint(w, `<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"/>`)
	})
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
			if n := r.URL.Query().Get("n"); n != "" {
				ch := nonce(n)
				mu.Lock()
				select {
				case <-ch:
				default:
					close(ch)
				}
				mu.Unlock()
			}
		}
	})
	if err := http.ListenAndServe(os.Args[1], mux); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
