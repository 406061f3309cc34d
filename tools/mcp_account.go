package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// The account tools of reference §5.1: sandboxes, images, volumes and MCP
// connections. Their texts name ids first, so an agent can pass them on.

// accountTool builds a tool whose handler decodes its arguments into a new
// In and runs fn; an *api.Error from fn becomes the answer text.
func accountTool[In any](name, desc string, schema json.RawMessage, fn func(ctx context.Context, in *In) (string, error)) Tool {
	return Tool{
		Name: name, Description: desc, Schema: schema,
		Handler: func(ctx context.Context, _ Sandbox, args json.RawMessage) (string, error) {
			in := new(In)
			if msg := decode(name, args, in); msg != "" {
				return msg, nil
			}
			out, err := fn(ctx, in)
			if text, done, err := result(ctx, err); done {
				if err != nil && ctx.Err() == nil {
					// Not a refusal and not our caller giving up: the
					// control plane did not answer (client.ConnError says
					// so and where), or answered nonsense.
					return withHint("Error: "+err.Error(), err), nil
				}
				return text, err
			}
			return out, nil
		},
	}
}

// idArg is the argument of the tools that take one id.
type idArg struct {
	SessionID    string `json:"session_id"`
	ImageID      string `json:"image_id"`
	VolumeID     string `json:"volume_id"`
	ConnectionID string `json:"connection_id"`
}

func (a idArg) id() string { return firstOf(a.SessionID, a.ImageID, a.VolumeID, a.ConnectionID) }

// byID builds a tool taking one id (idParam) and running fn with it.
func byID(name, desc, idParam, idDesc string, fn func(ctx context.Context, id string) (string, error)) Tool {
	return accountTool(name, desc, object(strParam(idParam, idDesc).req()), func(ctx context.Context, in *idArg) (string, error) {
		if msg := checkID(idParam, in.id()); msg != "" {
			return msg, nil
		}
		return fn(ctx, in.id())
	})
}

func sandboxText(sb api.Sandbox) string {
	s := fmt.Sprintf("%s (status: %s, size: %s", sb.ID, sb.Status, sb.Size)
	if sb.Label != "" {
		s += ", label: " + sb.Label
	}
	if sb.Status == api.StatusActive {
		s += ", expires_at: " + sb.ExpiresAt.UTC().Format(time.RFC3339)
	} else if sb.DestroyReason != "" {
		s += ", destroy_reason: " + sb.DestroyReason
	}
	return s + ")"
}

func (m mcpTools) createSandbox() Tool {
	schema := object(
		strParam("label", "A name for the sandbox, shown in lists."),
		strParam("size", "small (default), medium or large.").oneOf("small", "medium", "large"),
		numParam("storage_gb", "Disk space in GB.", 0, 0, 0).dflt(nil).noMax(),
		intParam("lifetime_minutes", "Minutes until the sandbox is destroyed (the server's default when omitted; extend it later).", 0, 1, 0).dflt(nil).noMax(),
		intParam("count", "How many identical sandboxes to create (default 1, max 10).", 1, 1, 10),
		strParam("image_id", "Boot from this image (create_sandbox_image); the default image when omitted."),
		listParam("mcp_connection_names", "Labels of MCP connections whose hosts the sandbox may reach."),
		param{name: "volume_mounts", typ: "object", desc: "Volumes to mount: volume id → absolute path in the sandbox."},
		intParam("gpu_count", "GPUs to attach (not supported by this deployment; omit it).", 0, 0, 0).dflt(nil).noMax(),
	)
	type in struct {
		api.CreateSandboxRequest
		GPUCount int `json:"gpu_count"`
	}
	return accountTool("create_sandbox",
		"Create a sandbox (an isolated Linux machine with /workspace) and return its id, which every sandbox tool takes as session_id. "+
			"Destroy it with destroy_sandbox when done; it is destroyed anyway when its lifetime ends.",
		schema, func(ctx context.Context, a *in) (string, error) {
			if a.GPUCount > 0 {
				return "Error: GPUs are not supported by this boxkite deployment\nHint: omit gpu_count.", nil
			}
			sbs, err := m.p.CreateSandboxes(ctx, a.CreateSandboxRequest)
			if err != nil {
				return "", err
			}
			lines := make([]string, len(sbs))
			for i, sb := range sbs {
				lines[i] = fmt.Sprintf("Created sandbox %s (status: %s, expires_at: %s)", sb.ID, sb.Status, sb.ExpiresAt.UTC().Format(time.RFC3339))
			}
			return strings.Join(lines, "\n"), nil
		})
}

func (m mcpTools) destroySandbox() Tool {
	return byID("destroy_sandbox", "Destroy a sandbox and everything in it (volumes survive).",
		"session_id", "The id of the sandbox to destroy.", func(ctx context.Context, id string) (string, error) {
			if err := m.p.DeleteSandbox(ctx, id); err != nil {
				return "", err
			}
			return "Destroyed sandbox " + id, nil
		})
}

func (m mcpTools) getSandbox() Tool {
	return byID("get_sandbox", "Show a sandbox: status, size, label and when it expires.",
		"session_id", "The id of the sandbox.", func(ctx context.Context, id string) (string, error) {
			sb, err := m.p.Sandbox(ctx, id)
			if err != nil {
				return "", err
			}
			return sandboxText(*sb), nil
		})
}

// The page of list_sandboxes and list_sandbox_images: an account's
// history of ended sandboxes grows with every sandbox it ever made, its
// images with every build, so one answer holds at most listMax of them.
const (
	listDefault = 50
	listMax     = 200
)

// pageParams are a paged list tool's limit and cursor parameters; noun
// is what it lists ("sandboxes").
func pageParams(noun string) []param {
	return []param{
		intParam("limit", fmt.Sprintf("The most %s to list (default %d, max %d).", noun, listDefault, listMax), listDefault, 1, listMax),
		strParam("cursor", "The cursor a previous answer ended with, for the page after it."),
	}
}

// pageArgs are a paged list tool's limit and cursor.
type pageArgs struct {
	Limit  *int   `json:"limit"`
	Cursor string `json:"cursor"`
}

// limit is the page's size, or the answer that refuses it.
func (a pageArgs) limit() (int, string) {
	limit := listDefault
	if a.Limit != nil {
		limit = *a.Limit
	}
	if limit < 1 || limit > listMax {
		return 0, fmt.Sprintf("Error: limit must be between 1 and %d, got %d\nHint: omit limit for the default of %d.", listMax, limit, listDefault)
	}
	return limit, ""
}

// pageText is a page of items as listText, ending with the cursor of the
// next page when there is one.
func pageText[T any](tool string, items []T, next, none string, text func(T) string) string {
	out := listText(items, none, text)
	if next != "" {
		out += fmt.Sprintf("\n(more: call %s with cursor %q for the next page)", tool, next)
	}
	return out
}

func (m mcpTools) listSandboxes() Tool {
	return accountTool("list_sandboxes", fmt.Sprintf("List the account's sandboxes, newest first, %d at a time by default; "+
		"when there are more, the answer ends with the cursor of the next page.", listDefault),
		object(append([]param{boolParam("active_only", "Only sandboxes that are running (default false).", false)}, pageParams("sandboxes")...)...),
		func(ctx context.Context, in *struct {
			ActiveOnly bool `json:"active_only"`
			pageArgs
		},
		) (string, error) {
			limit, refused := in.limit()
			if refused != "" {
				return refused, nil
			}
			sbs, next, err := m.p.ListSandboxesPage(ctx, in.ActiveOnly, limit, in.Cursor)
			if err != nil {
				return "", err
			}
			return pageText("list_sandboxes", sbs, next, "No sandboxes found.", sandboxText), nil
		})
}

func listText[T any](items []T, none string, text func(T) string) string {
	if len(items) == 0 {
		return none
	}
	lines := make([]string, len(items))
	for i, it := range items {
		lines[i] = "- " + text(it)
	}
	return strings.Join(lines, "\n")
}

func imageText(img api.Image) string {
	s := fmt.Sprintf("%s (status: %s, source: %s", img.ID, img.Status, img.Source)
	if img.Label != "" {
		s += ", label: " + img.Label
	}
	if img.FailureReason != "" {
		s += ", failure_reason: " + img.FailureReason
	}
	return s + ")"
}

func (m mcpTools) createImage() Tool {
	return accountTool("create_sandbox_image",
		"Build a sandbox image: a base plus apt, Python and npm packages. The build is queued; poll get_sandbox_image until its status is completed, "+
			"then pass its id as image_id to create_sandbox.",
		object(
			strParam("label", "A name for the image."),
			strParam("base", "The base image (default boxkite-default).").dflt("boxkite-default"),
			listParam("python_packages", "pip packages, e.g. pandas==2.2.2."),
			listParam("apt_packages", "Debian packages."),
			listParam("npm_packages", "npm packages, installed globally."),
		),
		func(ctx context.Context, in *api.CreateImageRequest) (string, error) {
			img, err := m.p.CreateImage(ctx, *in)
			if err != nil {
				return "", err
			}
			return "Created image " + imageText(*img), nil
		})
}

func (m mcpTools) getImage() Tool {
	return byID("get_sandbox_image", "Show a sandbox image and its build status.", "image_id", "The id of the image.",
		func(ctx context.Context, id string) (string, error) {
			img, err := m.p.GetImage(ctx, id)
			if err != nil {
				return "", err
			}
			return imageText(*img), nil
		})
}

func (m mcpTools) listImages() Tool {
	return accountTool("list_sandbox_images", fmt.Sprintf("List the account's sandbox images, newest first, %d at a time by default; "+
		"when there are more, the answer ends with the cursor of the next page.", listDefault),
		object(pageParams("images")...),
		func(ctx context.Context, in *pageArgs) (string, error) {
			limit, refused := in.limit()
			if refused != "" {
				return refused, nil
			}
			imgs, next, err := m.p.ListImagesPage(ctx, limit, in.Cursor)
			if err != nil {
				return "", err
			}
			return pageText("list_sandbox_images", imgs, next, "No images found.", imageText), nil
		})
}

func (m mcpTools) deleteImage() Tool {
	return byID("delete_sandbox_image", "Delete a sandbox image.", "image_id", "The id of the image.",
		func(ctx context.Context, id string) (string, error) {
			if err := m.p.DeleteImage(ctx, id); err != nil {
				return "", err
			}
			return "Deleted image " + id, nil
		})
}

func volumeText(v api.Volume) string {
	return fmt.Sprintf("%s (status: %s, label: %s, size_gb: %g)", v.ID, v.Status, v.Label, v.SizeGB)
}

// volumeArgs are create_sandbox_volume's arguments; SizeGB is nil when
// left out.
type volumeArgs struct {
	Label  string   `json:"label"`
	SizeGB *float64 `json:"size_gb"`
}

func (m mcpTools) createVolume() Tool {
	return accountTool("create_sandbox_volume",
		"Create a persistent volume; mount it into sandboxes with create_sandbox's volume_mounts. It outlives the sandboxes.",
		object(
			strParam("label", "A name for the volume."),
			numParam("size_gb", "Size in GB (default 1).", 1, 0, 0).noMax(),
		),
		func(ctx context.Context, in *volumeArgs) (string, error) {
			req := api.CreateVolumeRequest{Label: in.Label} // size_gb left out: the server's default
			if in.SizeGB != nil {
				// An explicit 0 is refused, as by the API: it would be
				// left out of the request and make a 1 GB volume.
				if req.SizeGB = *in.SizeGB; req.SizeGB <= 0 {
					return "", api.Invalid("size_gb", fmt.Sprintf("size_gb must be more than 0, got %g", req.SizeGB), "omit size_gb for the default of 1 GB")
				}
			}
			v, err := m.p.CreateVolume(ctx, req)
			if err != nil {
				return "", err
			}
			return "Created volume " + volumeText(*v), nil
		})
}

func (m mcpTools) getVolume() Tool {
	return byID("get_sandbox_volume", "Show a volume.", "volume_id", "The id of the volume.",
		func(ctx context.Context, id string) (string, error) {
			v, err := m.p.GetVolume(ctx, id)
			if err != nil {
				return "", err
			}
			return volumeText(*v), nil
		})
}

func (m mcpTools) listVolumes() Tool {
	return accountTool("list_sandbox_volumes", "List the account's volumes.", object(),
		func(ctx context.Context, _ *struct{}) (string, error) {
			vs, err := m.p.ListVolumes(ctx)
			if err != nil {
				return "", err
			}
			return listText(vs, "No volumes found.", volumeText), nil
		})
}

func (m mcpTools) deleteVolume() Tool {
	return byID("delete_sandbox_volume", "Delete a volume and its data.", "volume_id", "The id of the volume.",
		func(ctx context.Context, id string) (string, error) {
			if err := m.p.DeleteVolume(ctx, id); err != nil {
				return "", err
			}
			return "Deleted volume " + id, nil
		})
}

func connText(c api.MCPConnection) string {
	return fmt.Sprintf("%s (label: %s, catalog_id: %s, host: %s)", c.ID, c.Label, c.CatalogID, c.Host)
}

func (m mcpTools) createMCPConnection() Tool {
	return accountTool("create_mcp_connection",
		"Create an MCP connection: a named grant letting sandboxes reach a catalog entry's host (github, slack, notion, linear, …). "+
			"Pass its label in create_sandbox's mcp_connection_names.",
		object(
			strParam("label", "The connection's name; sandboxes refer to it by this.").req(),
			strParam("catalog_id", "The catalog entry, e.g. github.").req(),
		),
		func(ctx context.Context, in *api.CreateMCPConnectionRequest) (string, error) {
			c, err := m.p.CreateMCPConnection(ctx, *in)
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("Created MCP connection %s (label: %s, host: %s)", c.ID, c.Label, c.Host), nil
		})
}

func (m mcpTools) listMCPConnections() Tool {
	return accountTool("list_mcp_connections", "List the account's MCP connections.", object(),
		func(ctx context.Context, _ *struct{}) (string, error) {
			cs, err := m.p.ListMCPConnections(ctx)
			if err != nil {
				return "", err
			}
			return listText(cs, "No MCP connections found.", connText), nil
		})
}

func (m mcpTools) deleteMCPConnection() Tool {
	return byID("delete_mcp_connection", "Delete an MCP connection.", "connection_id", "The id of the connection.",
		func(ctx context.Context, id string) (string, error) {
			if err := m.p.DeleteMCPConnection(ctx, id); err != nil {
				return "", err
			}
			return "Deleted MCP connection " + id, nil
		})
}
