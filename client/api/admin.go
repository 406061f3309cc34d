package api

import "time"

// AdminMetrics is GET /v1/admin/metrics: every account's use of the
// server, for its operator (the reference's shape; at most
// MaxAdminAccounts accounts, busiest first).
type AdminMetrics struct {
	TotalAccounts                  int                   `json:"total_accounts"`
	GlobalConcurrentSandboxes      int                   `json:"global_concurrent_sandboxes"`
	GlobalConcurrentSandboxesLimit int                   `json:"global_concurrent_sandboxes_limit"` // 0: no limit
	TotalMonthlySandboxHoursUsed   float64               `json:"total_monthly_sandbox_hours_used"`
	Accounts                       []AdminAccountMetrics `json:"accounts"`
}

// AdminAccountMetrics is one account's line of AdminMetrics.
type AdminAccountMetrics struct {
	AccountID               string  `json:"account_id"`
	Email                   string  `json:"email"`
	ConcurrentSandboxes     int     `json:"concurrent_sandboxes"`
	MonthlySandboxHoursUsed float64 `json:"monthly_sandbox_hours_used"`
}

// MaxAdminAccounts bounds AdminMetrics.Accounts.
const MaxAdminAccounts = 500

// AdminAccess is one line of the admin access log: a call to /v1/admin/*,
// by whom and with what answer.
type AdminAccess struct {
	ID        string    `json:"id"`
	AccountID string    `json:"account_id"`
	Email     string    `json:"email"`
	KeyID     string    `json:"api_key_id"`
	Method    string    `json:"method"`
	Path      string    `json:"path"`
	Query     string    `json:"query"`
	Status    int       `json:"status"`
	At        time.Time `json:"at"`
}
