// The fixture of `weave check`'s drift test (tests/e2e/test_check.cpp): v1 and v2 are the same
// program except that v2's Header has one more field before Port, so Port and Host move.
package main

import "fmt"

type Header struct {
	Proto string
	Port  uint16
	Host  string
}

type Request struct {
	Path   string
	Header *Header
}

type Server struct {
	Name string
}

//go:noinline
func (s *Server) Handle(req *Request, deadline int64) int {
	return int(req.Header.Port) + len(req.Header.Host) + len(req.Path) + len(s.Name) + int(deadline)
}

func main() {
	s := &Server{Name: "check"}
	req := &Request{Path: "/v1", Header: &Header{Proto: "h2", Port: 8080, Host: "example"}}
	fmt.Println(s.Handle(req, 5))
}
