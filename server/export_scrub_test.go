package server

import "time"

// SetScrubIdle changes how long a scrubbed output stream holds back the
// end of its text while nothing new comes.
func (s *Server) SetScrubIdle(d time.Duration) { s.scrubIdle = d }
