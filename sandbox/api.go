package sandbox

import "net/http"

func (s *Server) apiRoutes(mux *http.ServeMux) {}
