// hello is the example weave traces in the README's demo: a tiny request handler loop.
// It prints what it passes to Handle, so the tracer's events can be read side by side with it.
package main

import (
	"fmt"
	"time"
)

type Header struct {
	Port uint16
	Host string
}

type Request struct {
	Path   string
	Header *Header
}

type Server struct {
	Name  string
	Count int
}

//go:noinline
func (s *Server) Handle(req *Request, deadline int64) bool {
	s.Count++
	return len(req.Path) > 1 && deadline > 0 // "/" fails: the README asks which calls did
}

func main() {
	srv := &Server{Name: "hello"}
	paths := []string{"/", "/users/42", "/search?q=weave"}
	for i, path := range paths {
		req := &Request{Path: path, Header: &Header{Port: uint16(8080 + i), Host: "localhost"}}
		deadline := int64(100 * (i + 1))
		fmt.Printf("hello: Handle(req.Path=%q, req.Header.Port=%d, deadline=%d, s.Name=%q)\n",
			req.Path, req.Header.Port, deadline, srv.Name)
		srv.Handle(req, deadline)
		time.Sleep(10 * time.Millisecond)
	}
}
