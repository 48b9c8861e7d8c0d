package deploy

import (
	"fmt"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// The Kubernetes runbook of docs/deploy.md, read as the commands an
// operator types: runbookBlock takes a block's lines, parseRunbookLine
// turns each into a runbookCmd, and runbook (runbook_run_test.go) runs
// them on the StatefulSet's pods in podman. A line of a form not known
// here is an error, so a new step in the doc must be taught to the test
// before the test passes again.

const deployDoc = "../docs/deploy.md"

// runbookBlock is the commands of the ```sh block of docs/deploy.md's
// "## Kubernetes runbook" that follows the paragraph starting with
// **title: its blank and comment lines left out, a line whose single
// quotes are open (a multi-line JSON patch) joined with the next ones.
func runbookBlock(doc, title string) ([]string, error) {
	lines := strings.Split(doc, "\n")
	start := -1
	for i, l := range lines {
		if l == "## Kubernetes runbook" {
			start = i + 1
			break
		}
	}
	if start < 0 {
		return nil, fmt.Errorf("no section ## Kubernetes runbook")
	}
	para := -1
	for i := start; i < len(lines) && !strings.HasPrefix(lines[i], "## "); i++ {
		if strings.HasPrefix(lines[i], "**"+title) {
			if para >= 0 {
				return nil, fmt.Errorf("two paragraphs start with **%s", title)
			}
			para = i
		}
	}
	if para < 0 {
		return nil, fmt.Errorf("the runbook has no paragraph starting with **%s", title)
	}
	var block []string
	open := false
	for i := para + 1; i < len(lines); i++ {
		l := lines[i]
		if !open {
			if strings.HasPrefix(l, "## ") || strings.HasPrefix(l, "**") {
				break
			}
			if strings.HasPrefix(l, "```") {
				if l != "```sh" {
					return nil, fmt.Errorf("**%s: the block is %q, not ```sh", title, l)
				}
				open = true
			}
			continue
		}
		if strings.HasPrefix(l, "```") {
			return joinQuoted(block, title)
		}
		block = append(block, l)
	}
	return nil, fmt.Errorf("no ```sh block after **%s", title)
}

// joinQuoted joins lines while a single quote is open and leaves out
// blank lines and comments.
func joinQuoted(lines []string, title string) ([]string, error) {
	var out []string
	cur := ""
	for _, l := range lines {
		if cur == "" {
			if t := strings.TrimSpace(l); t == "" || strings.HasPrefix(t, "#") {
				continue
			}
			cur = l
		} else {
			cur += "\n" + l
		}
		if !quoteOpen(cur) {
			out = append(out, cur)
			cur = ""
		}
	}
	if cur != "" {
		return nil, fmt.Errorf("**%s: a single quote is never closed: %s", title, cur)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("**%s: the block has no command", title)
	}
	return out, nil
}

// quoteOpen tells whether s ends inside '...' or "...", its comments
// (# at a word's start, to the line's end) left out.
func quoteOpen(s string) bool {
	var q byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case q != 0:
			if c == q {
				q = 0
			}
		case c == '\'' || c == '"':
			q = c
		case c == '#' && (i == 0 || strings.ContainsRune(" \t\n", rune(s[i-1]))):
			for i < len(s) && s[i] != '\n' {
				i++
			}
		}
	}
	return q != 0
}

// shellWords splits a command line as sh does for the plain forms the
// runbook uses: words split by blanks, '...' taken as written, "..." and
// bare words with $NAME and ${NAME} expanded from vars (an unset one is
// an error), a trailing # comment and a trailing & (background). Anything
// else a shell would interpret (pipes, ;, redirections, $(...), globs,
// backslashes) is refused: this reader would not run it as sh does.
func shellWords(line string, vars map[string]string) (words []string, background bool, err error) {
	var w strings.Builder
	inWord := false
	end := func() {
		if inWord {
			words = append(words, w.String())
			w.Reset()
			inWord = false
		}
	}
	expand := func(s string, i int) (int, error) { // s[i] == '$'
		rest := s[i+1:]
		var name string
		n := 0
		if strings.HasPrefix(rest, "{") {
			j := strings.IndexByte(rest, '}')
			if j < 0 {
				return 0, fmt.Errorf("an unclosed ${")
			}
			name, n = rest[1:j], j+1
		} else {
			name = varName.FindString(rest)
			n = len(name)
		}
		if !varName.MatchString(name) || varName.FindString(name) != name {
			return 0, fmt.Errorf("a $ this reader does not expand: %q", s[i:])
		}
		v, ok := vars[name]
		if !ok {
			return 0, fmt.Errorf("$%s is not set", name)
		}
		w.WriteString(v)
		return i + 1 + n, nil
	}
	for i := 0; i < len(line); {
		c := line[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			end()
			i++
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return nil, false, fmt.Errorf("an unclosed '")
			}
			w.WriteString(line[i+1 : i+1+j])
			inWord = true
			i += j + 2
		case c == '"':
			inWord = true
			i++
			for {
				if i >= len(line) {
					return nil, false, fmt.Errorf("an unclosed \"")
				}
				if line[i] == '"' {
					i++
					break
				}
				if strings.ContainsRune("`\\", rune(line[i])) {
					return nil, false, fmt.Errorf("%q inside \"...\": not read here", line[i])
				}
				if line[i] == '$' {
					if i, err = expand(line, i); err != nil {
						return nil, false, err
					}
					continue
				}
				w.WriteByte(line[i])
				i++
			}
		case c == '#' && !inWord:
			for i < len(line) && line[i] != '\n' {
				i++
			}
		case c == '&':
			end()
			if strings.TrimSpace(line[i+1:]) != "" && !strings.HasPrefix(strings.TrimSpace(line[i+1:]), "#") {
				return nil, false, fmt.Errorf("& before the end of the line")
			}
			if background {
				return nil, false, fmt.Errorf("&&")
			}
			background = true
			i++
		case c == '$':
			if i, err = expand(line, i); err != nil {
				return nil, false, err
			}
			if strings.ContainsAny(w.String(), " \t\n*?[") {
				return nil, false, fmt.Errorf("an unquoted $ expanding to %q (word splitting, globs)", w.String())
			}
			inWord = true
		case strings.ContainsRune("|;<>`\\()*?[]{}~", rune(c)):
			return nil, false, fmt.Errorf("%q outside quotes: a shell form this reader does not run", c)
		default:
			if background {
				return nil, false, fmt.Errorf("a word after &")
			}
			w.WriteByte(c)
			inWord = true
			i++
		}
	}
	end()
	return words, background, nil
}

var (
	varName    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*`)
	assignment = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)=`)
)

// runbookCmd is one runbook line, parsed.
type runbookCmd struct {
	line string
	kind string // one of the cmd* constants
	// scale: the replicas; wait-ready: the pod's ordinal; delete-pvc: the
	// PVCs' ordinals.
	replicas int
	ords     []int
	claims   []string          // delete-pvc: each PVC's template
	selector map[string]string // wait-delete
	name     string            // a Secret's or a variable's
	files    [][2]string       // create-secret: key and path, in order
	patch    []byte            // patch: the JSON patch
	kustom   string            // apply: the kustomization's directory under kubernetes/
	ports    [2]int            // port-forward: local and remote
	store    string            // export: SEQCTL_STORE as written
	token    string            // export: SEQCTL_TOKEN_FILE as written
	ca       string            // export: SEQCTL_CA as written
	timeout  time.Duration     // wait, rollout: --timeout (0: none)
}

const (
	cmdScale        = "scale"
	cmdWaitDelete   = "wait-delete"
	cmdWaitReady    = "wait-ready"
	cmdRollout      = "rollout-status"
	cmdDeletePVC    = "delete-pvc"
	cmdCreateSecret = "create-secret"
	cmdDeleteSecret = "delete-secret"
	cmdPatch        = "patch"
	cmdApply        = "apply"
	cmdApplyFile    = "apply-file"
	cmdRolloutDep   = "rollout-status-deployment"
	cmdPortForward  = "port-forward"
	cmdExport       = "export"
	cmdAssign       = "assign"
	cmdSeqctl       = "seqctl"
)

// parseRunbookLine parses line against the StatefulSet ss (its name,
// namespace and PVC templates) and the API Service api, with vars for
// $NAME. It refuses any command, verb, resource, flag or namespace the
// runbook is not known to use, and any it uses wrongly (a namespaced
// verb without -n, a pod or PVC not of ss, a port the Service lacks).
func parseRunbookLine(line string, ss *appsv1.StatefulSet, api *corev1.Service, vars map[string]string) (runbookCmd, error) {
	cmd := runbookCmd{line: line}
	trimmed := strings.TrimSpace(line)
	switch {
	case strings.HasPrefix(trimmed, "seqctl "):
		// Run by bash as written (the runbook uses $(date ...)).
		cmd.kind = cmdSeqctl
		return cmd, nil
	case assignment.MatchString(trimmed):
		// name=VALUE, evaluated by bash; VALUE may hold $(...).
		cmd.kind, cmd.name = cmdAssign, assignment.FindStringSubmatch(trimmed)[1]
		return cmd, nil
	}
	words, bg, err := shellWords(line, vars)
	if err != nil {
		return cmd, err
	}
	if len(words) == 0 {
		return cmd, fmt.Errorf("no command")
	}
	if bg && (words[0] != "kubectl" || len(words) < 4 || words[3] != "port-forward") {
		return cmd, fmt.Errorf("only a port-forward runs in the background")
	}
	switch words[0] {
	case "export":
		if len(words) < 2 {
			return cmd, fmt.Errorf("export of nothing")
		}
		cmd.kind = cmdExport
		for _, kv := range words[1:] {
			k, v, ok := strings.Cut(kv, "=")
			switch {
			case !ok:
				return cmd, fmt.Errorf("export %q: not NAME=VALUE", kv)
			case k == "SEQCTL_STORE":
				cmd.store = v
			case k == "SEQCTL_TOKEN_FILE":
				// Read only where the pods run with their Secrets
				// (runbook.secure); elsewhere plain HTTP and no auth.
				cmd.token = v
			case k == "SEQCTL_CA":
				cmd.ca = v
			default:
				return cmd, fmt.Errorf("export %s: not a variable of seqctl this test knows", k)
			}
		}
		if cmd.store == "" {
			return cmd, fmt.Errorf("export without SEQCTL_STORE")
		}
		return cmd, nil
	case "kubectl":
	default:
		return cmd, fmt.Errorf("%q: not kubectl, seqctl, export or an assignment", words[0])
	}
	ns, args, err := kubectlNamespace(words[1:])
	if err != nil {
		return cmd, err
	}
	if len(args) == 0 {
		return cmd, fmt.Errorf("kubectl without a verb")
	}
	verb := args[0]
	if verb != "apply" && ns == "" {
		return cmd, fmt.Errorf("kubectl %s without -n: it would act on the namespace \"default\"", verb)
	}
	if ns != "" && ns != ss.Namespace {
		return cmd, fmt.Errorf("namespace %q, the StatefulSet's is %q", ns, ss.Namespace)
	}
	podOrdinal := func(name string) (int, error) {
		n, err := strconv.Atoi(strings.TrimPrefix(name, ss.Name+"-"))
		if err != nil || !strings.HasPrefix(name, ss.Name+"-") || n < 0 || name != fmt.Sprintf("%s-%d", ss.Name, n) {
			return 0, fmt.Errorf("%q is not a pod of StatefulSet %s", name, ss.Name)
		}
		return n, nil
	}
	isSet := func(pos []string) bool {
		return slices.Equal(pos, []string{"statefulset", ss.Name}) || slices.Equal(pos, []string{"statefulset/" + ss.Name})
	}
	timeout := func(flags map[string][]string) error {
		if v := flags["--timeout"]; v != nil {
			d, err := time.ParseDuration(v[0])
			if err != nil || d <= 0 {
				return fmt.Errorf("--timeout=%s", v[0])
			}
			cmd.timeout = d
		}
		return nil
	}
	switch verb {
	case "scale":
		pos, flags, err := kubectlFlags(args[1:], "--replicas")
		if err != nil {
			return cmd, err
		}
		if !isSet(pos) || flags["--replicas"] == nil {
			return cmd, fmt.Errorf("kubectl scale: want statefulset %s --replicas=N", ss.Name)
		}
		n, err := strconv.Atoi(flags["--replicas"][0])
		if err != nil || n < 0 {
			return cmd, fmt.Errorf("--replicas=%s", flags["--replicas"][0])
		}
		cmd.kind, cmd.replicas = cmdScale, n
	case "wait":
		pos, flags, err := kubectlFlags(args[1:], "--for", "-l", "--timeout")
		if err != nil {
			return cmd, err
		}
		if err := timeout(flags); err != nil {
			return cmd, err
		}
		switch {
		case slices.Equal(flags["--for"], []string{"delete"}) && slices.Equal(pos, []string{"pod"}) && flags["-l"] != nil:
			cmd.kind, cmd.selector = cmdWaitDelete, map[string]string{}
			for _, kv := range strings.Split(flags["-l"][0], ",") {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return cmd, fmt.Errorf("-l %s: only k=v,... selectors are read here", flags["-l"][0])
				}
				cmd.selector[k] = v
			}
		case slices.Equal(flags["--for"], []string{"condition=Ready"}) && len(pos) == 1 && strings.HasPrefix(pos[0], "pod/") && flags["-l"] == nil:
			n, err := podOrdinal(strings.TrimPrefix(pos[0], "pod/"))
			if err != nil {
				return cmd, err
			}
			cmd.kind, cmd.ords = cmdWaitReady, []int{n}
		default:
			return cmd, fmt.Errorf("kubectl wait: only --for=delete pod -l SELECTOR and --for=condition=Ready pod/NAME are known here")
		}
	case "rollout":
		pos, flags, err := kubectlFlags(args[1:], "--timeout")
		if err != nil {
			return cmd, err
		}
		if err := timeout(flags); err != nil {
			return cmd, err
		}
		switch {
		case len(pos) == 2 && pos[0] == "status" && isSet(pos[1:]):
			cmd.kind = cmdRollout
		case len(pos) == 2 && pos[0] == "status" && strings.HasPrefix(pos[1], "deployment/") && len(pos[1]) > len("deployment/"):
			// Which Deployment exists is the runbook's state: exec checks.
			cmd.kind, cmd.name = cmdRolloutDep, strings.TrimPrefix(pos[1], "deployment/")
		default:
			return cmd, fmt.Errorf("kubectl rollout: only status statefulset/%s and status deployment/NAME are known here", ss.Name)
		}
	case "delete":
		pos, _, err := kubectlFlags(args[1:])
		if err != nil {
			return cmd, err
		}
		if len(pos) < 2 {
			return cmd, fmt.Errorf("kubectl delete: want pvc NAME... or secret NAME")
		}
		switch pos[0] {
		case "pvc":
			cmd.kind = cmdDeletePVC
			for _, n := range pos[1:] {
				ord, claim := -1, ""
				for _, c := range ss.Spec.VolumeClaimTemplates {
					if pod, ok := strings.CutPrefix(n, c.Name+"-"); ok {
						if o, err := podOrdinal(pod); err == nil {
							ord, claim = o, c.Name
						}
					}
				}
				if ord < 0 {
					return cmd, fmt.Errorf("PVC %s is no PVC of StatefulSet %s (CLAIM-%s-N)", n, ss.Name, ss.Name)
				}
				cmd.ords, cmd.claims = append(cmd.ords, ord), append(cmd.claims, claim)
			}
		case "secret":
			if len(pos) != 2 {
				return cmd, fmt.Errorf("kubectl delete secret: one at a time here")
			}
			cmd.kind, cmd.name = cmdDeleteSecret, pos[1]
		default:
			return cmd, fmt.Errorf("kubectl delete %s: only pvc and secret are known here", pos[0])
		}
	case "create":
		pos, flags, err := kubectlFlags(args[1:], "--from-file")
		if err != nil {
			return cmd, err
		}
		if len(pos) != 3 || pos[0] != "secret" || pos[1] != "generic" || flags["--from-file"] == nil {
			return cmd, fmt.Errorf("kubectl create: only secret generic NAME --from-file=... is known here")
		}
		cmd.kind, cmd.name = cmdCreateSecret, pos[2]
		for _, f := range flags["--from-file"] {
			k, p, ok := strings.Cut(f, "=")
			if !ok {
				k, p = f[strings.LastIndexByte(f, '/')+1:], f
			}
			if k == "" || p == "" {
				return cmd, fmt.Errorf("--from-file=%s", f)
			}
			cmd.files = append(cmd.files, [2]string{k, p})
		}
	case "patch":
		pos, flags, err := kubectlFlags(args[1:], "--type", "-p")
		if err != nil {
			return cmd, err
		}
		if !isSet(pos) || !slices.Equal(flags["--type"], []string{"json"}) || flags["-p"] == nil {
			return cmd, fmt.Errorf("kubectl patch: only statefulset %s --type=json -p PATCH is known here", ss.Name)
		}
		cmd.kind, cmd.patch = cmdPatch, []byte(flags["-p"][0])
	case "apply":
		pos, flags, err := kubectlFlags(args[1:], "-k", "-f")
		if err != nil {
			return cmd, err
		}
		if ns != "" {
			return cmd, fmt.Errorf("kubectl apply -n: the manifests name their namespace")
		}
		if f := flags["-f"]; f != nil {
			if len(pos) != 0 || flags["-k"] != nil || f[0] != "deploy/kubernetes/namespace.yaml" {
				return cmd, fmt.Errorf("kubectl apply -f: only deploy/kubernetes/namespace.yaml is known here")
			}
			cmd.kind, cmd.kustom = cmdApplyFile, "namespace.yaml"
			return cmd, nil
		}
		dir, ok := strings.CutPrefix(strings.TrimSuffix(firstOf(flags["-k"]), "/"), "deploy/kubernetes/")
		if len(pos) != 0 || !ok || !slices.Contains([]string{"storesvr", "allocsvr", "monitoring"}, dir) {
			return cmd, fmt.Errorf("kubectl apply: only -k deploy/kubernetes/storesvr, allocsvr or monitoring and -f deploy/kubernetes/namespace.yaml are known here")
		}
		cmd.kind, cmd.kustom = cmdApply, dir
	case "port-forward":
		pos, _, err := kubectlFlags(args[1:])
		if err != nil {
			return cmd, err
		}
		if !bg {
			return cmd, fmt.Errorf("a port-forward not in the background (&) holds the terminal: the next line never runs")
		}
		if len(pos) != 2 || pos[0] != "service/"+api.Name {
			return cmd, fmt.Errorf("kubectl port-forward: only service/%s LOCAL:REMOTE is known here", api.Name)
		}
		l, r, _ := strings.Cut(pos[1], ":")
		lp, err1 := strconv.Atoi(l)
		rp, err2 := strconv.Atoi(r)
		if err1 != nil || err2 != nil {
			return cmd, fmt.Errorf("port-forward %s: want LOCAL:REMOTE", pos[1])
		}
		found := false
		for _, p := range api.Spec.Ports {
			found = found || int(p.Port) == rp
		}
		if !found {
			return cmd, fmt.Errorf("Service %s has no port %d", api.Name, rp)
		}
		cmd.kind, cmd.ports = cmdPortForward, [2]int{lp, rp}
	default:
		return cmd, fmt.Errorf("kubectl %s: not a verb this test knows", verb)
	}
	return cmd, nil
}

// kubectlNamespace takes -n NS (or --namespace) out of args, wherever it is.
func kubectlNamespace(args []string) (ns string, rest []string, err error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-n" || a == "--namespace":
			if i+1 == len(args) {
				return "", nil, fmt.Errorf("%s without a value", a)
			}
			ns = args[i+1]
			i++
		case strings.HasPrefix(a, "--namespace="), strings.HasPrefix(a, "-n="):
			_, ns, _ = strings.Cut(a, "=")
		default:
			rest = append(rest, a)
		}
	}
	return ns, rest, nil
}

// kubectlFlags splits args into positionals and the flags known (each
// taking a value, --flag=V or --flag V); any other flag is an error.
func kubectlFlags(args []string, known ...string) (pos []string, flags map[string][]string, err error) {
	flags = map[string][]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			pos = append(pos, a)
			continue
		}
		name, val, hasVal := strings.Cut(a, "=")
		if !slices.Contains(known, name) {
			return nil, nil, fmt.Errorf("flag %s: not one this test knows here", name)
		}
		if !hasVal {
			if i+1 == len(args) {
				return nil, nil, fmt.Errorf("%s without a value", name)
			}
			val = args[i+1]
			i++
		}
		if flags[name] != nil && name != "--from-file" {
			return nil, nil, fmt.Errorf("%s twice", name)
		}
		flags[name] = append(flags[name], val)
	}
	return pos, flags, nil
}

func firstOf(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// storeURLPort is the port of an exported SEQCTL_STORE on this machine
// (localhost), which a port-forward must listen on.
func storeURLPort(store string) (int, error) {
	u, err := url.Parse(store)
	if err != nil || (u.Hostname() != "localhost" && u.Hostname() != "127.0.0.1") {
		return 0, fmt.Errorf("SEQCTL_STORE=%s: not an address of this machine, where the port-forward listens", store)
	}
	p, err := strconv.Atoi(u.Port())
	if err != nil {
		return 0, fmt.Errorf("SEQCTL_STORE=%s: no port", store)
	}
	return p, nil
}

// readDeployDoc is docs/deploy.md.
func readDeployDoc() (string, error) {
	b, err := os.ReadFile(deployDoc)
	return string(b), err
}
