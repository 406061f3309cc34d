package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

func gitStatusTool() Tool {
	return Tool{
		Name:        "git_status",
		Description: "Show the working tree status of a git repository in the sandbox: the branch, staged, unstaged and untracked files.",
		Schema:      object(strParam("path", pathDoc).dflt(repoDefault)),
		Handler: func(ctx context.Context, sb Sandbox, args json.RawMessage) (string, error) {
			var in struct {
				Path string `json:"path"`
			}
			if msg := decode("git_status", args, &in); msg != "" {
				return msg, nil
			}
			p, msg := repoPath(in.Path, repoDefault)
			if msg != "" {
				return msg, nil
			}
			return gitRun(ctx, sb, []string{"-C", shellQuote(p), "status"}, gitLocalTimeout, nil, outOr("(no output)"))
		},
	}
}

func gitAddTool() Tool {
	return Tool{
		Name:        "git_add",
		Description: "Stage changes in a git repository in the sandbox: the given files, or every change (git add -A) when files is omitted.",
		Schema: object(
			strParam("path", pathDoc).dflt(repoDefault),
			listParam("files", "Files to stage, relative to the repository (default: all changes)."),
		),
		Handler: runGitAdd,
	}
}

func runGitAdd(ctx context.Context, sb Sandbox, args json.RawMessage) (string, error) {
	var in struct {
		Path  string   `json:"path"`
		Files []string `json:"files"`
	}
	if msg := decode("git_add", args, &in); msg != "" {
		return msg, nil
	}
	p, msg := repoPath(in.Path, repoDefault)
	if msg != "" {
		return msg, nil
	}
	if len(in.Files) > 1000 {
		return "Error: files lists more than 1000 paths; stage a directory instead", nil
	}
	w := []string{"-C", shellQuote(p), "add"}
	if len(in.Files) == 0 {
		return gitRun(ctx, sb, append(w, "-A"), gitLocalTimeout, nil, outOr("Staged all changes in "+p))
	}
	w = append(w, "--")
	for _, f := range in.Files {
		if msg := checkPath("file", f); msg != "" {
			return msg, nil
		}
		w = append(w, shellQuote(f))
	}
	return gitRun(ctx, sb, w, gitLocalTimeout, nil, outOr(fmt.Sprintf("Staged %s in %s", strings.Join(in.Files, ", "), p)))
}

func gitCommitTool() Tool {
	return Tool{
		Name:        "git_commit",
		Description: "Commit the staged changes of a git repository in the sandbox. Pass author_name and author_email when the repository has no identity configured.",
		Schema: object(
			strParam("message", "The commit message.").req(),
			strParam("path", pathDoc).dflt(repoDefault),
			strParam("author_name", "Author (and committer) name for this commit."),
			strParam("author_email", "Author (and committer) email for this commit."),
		),
		Handler: runGitCommit,
	}
}

func runGitCommit(ctx context.Context, sb Sandbox, args json.RawMessage) (string, error) {
	var in struct {
		Message string `json:"message"`
		Path    string `json:"path"`
		Name    string `json:"author_name"`
		Email   string `json:"author_email"`
	}
	if msg := decode("git_commit", args, &in); msg != "" {
		return msg, nil
	}
	p, msg := repoPath(in.Path, repoDefault)
	switch {
	case msg != "":
		return msg, nil
	case strings.TrimSpace(in.Message) == "":
		return "Error: message must not be empty", nil
	case strings.ContainsRune(in.Message, 0):
		return "Error: message must not contain NUL bytes", nil
	}
	for _, f := range []struct{ name, v string }{{"author_name", in.Name}, {"author_email", in.Email}} {
		if hasControl(f.v) || strings.ContainsAny(f.v, "<>") || len(f.v) > 256 {
			return fmt.Sprintf("Error: %s must be one line of at most 256 characters without < or >", f.name), nil
		}
	}
	var w []string
	if in.Name != "" {
		w = append(w, "-c", shellQuote("user.name="+in.Name))
	}
	if in.Email != "" {
		w = append(w, "-c", shellQuote("user.email="+in.Email))
	}
	w = append(w, "-C", shellQuote(p), "commit", "-m", shellQuote(in.Message))
	return gitRun(ctx, sb, w, gitLocalTimeout, nil, outOr("Committed"))
}

func gitBranchTool() Tool {
	return Tool{
		Name:        "git_branch",
		Description: "List the branches of a git repository in the sandbox, or create a branch (at the current commit, without switching to it) when name is given.",
		Schema: object(
			strParam("path", pathDoc).dflt(repoDefault),
			strParam("name", "The branch to create; omit to list branches."),
		),
		Handler: runGitBranch,
	}
}

func runGitBranch(ctx context.Context, sb Sandbox, args json.RawMessage) (string, error) {
	var in struct {
		Path string `json:"path"`
		Name string `json:"name"`
	}
	if msg := decode("git_branch", args, &in); msg != "" {
		return msg, nil
	}
	p, msg := repoPath(in.Path, repoDefault)
	if msg != "" {
		return msg, nil
	}
	w := []string{"-C", shellQuote(p), "branch"}
	if in.Name == "" {
		return gitRun(ctx, sb, append(w, "--list"), gitLocalTimeout, nil, outOr("(no branches yet)"))
	}
	if msg := checkBranch("name", in.Name); msg != "" {
		return msg, nil
	}
	return gitRun(ctx, sb, append(w, shellQuote(in.Name)), gitLocalTimeout, nil, outOr("Created branch "+in.Name))
}

func gitCheckoutTool() Tool {
	return Tool{
		Name:        "git_checkout",
		Description: "Switch a git repository in the sandbox to a branch, tag or commit, or create a new branch there and switch to it with create.",
		Schema: object(
			strParam("path", pathDoc).dflt(repoDefault),
			strParam("ref", "The branch, tag or commit to check out, or the new branch's name with create.").dflt(""),
			boolParam("create", "Create ref as a new branch at the current commit and switch to it, like git checkout -b (default false).", false),
		),
		Handler: runGitCheckout,
	}
}

func runGitCheckout(ctx context.Context, sb Sandbox, args json.RawMessage) (string, error) {
	var in struct {
		Path   string `json:"path"`
		Ref    string `json:"ref"`
		Create bool   `json:"create"`
	}
	if msg := decode("git_checkout", args, &in); msg != "" {
		return msg, nil
	}
	p, msg := repoPath(in.Path, repoDefault)
	switch {
	case msg != "":
		return msg, nil
	case in.Ref == "":
		return "Error: ref must name a branch, tag or commit", nil
	}
	w := []string{"-C", shellQuote(p), "checkout"}
	if in.Create {
		if msg := checkBranch("ref", in.Ref); msg != "" {
			return msg, nil
		}
		w = append(w, "-b", shellQuote(in.Ref))
	} else {
		if msg := checkRevision(in.Ref); msg != "" {
			return msg, nil
		}
		// "--": ref is a revision even when a file has the same name.
		w = append(w, shellQuote(in.Ref), "--")
	}
	return gitRun(ctx, sb, w, gitLocalTimeout, nil, outOr(fmt.Sprintf("Switched to %s", in.Ref)))
}
