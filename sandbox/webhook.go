package sandbox

type hookSender struct{}

func newHookSender(s *Server) *hookSender { return &hookSender{} }
