package io.moe4j.text.chat.jinja;

import io.moe4j.MoeException;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Walks a parsed template once for one set of variables. Scoping follows Jinja: a for-loop iteration, a macro
 * call and a with block each get their own scope (a {@code set} inside them does not leak out, hence
 * {@code namespace()}); {@code if} does not. One instance renders one template call and is then dropped.
 */
final class Renderer {
    private static final class LoopControl extends RuntimeException {
        private static final long serialVersionUID = 1L;

        final boolean isBreak;

        LoopControl(boolean isBreak) {
            super(null, null, false, false);
            this.isBreak = isBreak;
        }
    }

    private static final LoopControl BREAK = new LoopControl(true);
    private static final LoopControl CONTINUE = new LoopControl(false);

    private final String templateName;
    private final Map<String, Object> globals;
    private int line;
    private int loopDepth;

    Renderer(String templateName, Map<String, Object> globals) {
        this.templateName = templateName;
        this.globals = globals;
    }

    String render(List<Stmt> body, Map<String, Object> variables) {
        Scope root = new Scope(null);
        variables.forEach(root::set);
        StringBuilder out = new StringBuilder();
        try {
            execute(body, root, out);
        } catch (TemplateRaisedException e) {
            throw e;
        } catch (RaisedByTemplate e) {
            throw new TemplateRaisedException(templateName, line, e.getMessage());
        } catch (JinjaRuntimeException e) {
            throw new MoeException("template " + templateName + " line " + line + ": " + e.getMessage());
        } catch (LoopControl e) {
            throw new MoeException("template " + templateName + " line " + line + ": break or continue outside a loop");
        } catch (MoeException e) {
            throw e;
        } catch (RuntimeException e) {
            // A case the engine does not handle: still one clear error naming the place, not a crash.
            throw new MoeException("template " + templateName + " line " + line + ": cannot render (" + e + ")", e);
        } catch (StackOverflowError e) {
            throw new MoeException("template " + templateName + " line " + line + ": recursion too deep");
        }
        return out.toString();
    }

    /** What {@code raise_exception} throws; the renderer adds the template name and line. */
    static final class RaisedByTemplate extends RuntimeException {
        private static final long serialVersionUID = 1L;

        RaisedByTemplate(String message) {
            super(message, null, false, false);
        }
    }

    // ---- statements ----

    private void execute(List<Stmt> body, Scope scope, StringBuilder out) {
        for (Stmt s : body) {
            line = s.line();
            switch (s) {
                case Stmt.Text t -> out.append(t.text());
                case Stmt.Print p -> out.append(Py.str(eval(p.value(), scope)));
                case Stmt.If f -> {
                    boolean done = false;
                    for (int i = 0; i < f.conditions().size() && !done; i++) {
                        if (Py.truthy(eval(f.conditions().get(i), scope))) {
                            execute(f.bodies().get(i), scope, out);
                            done = true;
                        }
                    }
                    if (!done) {
                        execute(f.otherwise(), scope, out);
                    }
                }
                case Stmt.For f -> forLoop(f, scope, out);
                case Stmt.Set st -> assign(st, scope);
                case Stmt.SetBlock sb -> {
                    StringBuilder inner = new StringBuilder();
                    execute(sb.body(), scope, inner);
                    scope.set(sb.target(), applyFilters(sb.filters(), inner.toString(), scope));
                }
                case Stmt.Macro m -> scope.set(m.name(), new Macro(m.name(), m.params(), m.defaults(), m.body(), scope));
                case Stmt.CallBlock cb -> {
                    Macro caller = new Macro("caller", cb.params(), cb.defaults(), cb.body(), scope);
                    Object callee = eval(cb.call().callee(), scope);
                    List<Object> args = new ArrayList<>();
                    Map<String, Object> kwargs = new LinkedHashMap<>();
                    evalArgs(cb.call().args(), scope, args, kwargs);
                    kwargs.put("caller", caller);
                    out.append(Py.str(invoke(callee, args, kwargs)));
                }
                case Stmt.FilterBlock fb -> {
                    StringBuilder inner = new StringBuilder();
                    execute(fb.body(), scope, inner);
                    out.append(Py.str(applyFilters(fb.filters(), inner.toString(), scope)));
                }
                case Stmt.With w -> {
                    Scope inner = new Scope(scope);
                    for (int i = 0; i < w.names().size(); i++) {
                        inner.set(w.names().get(i), eval(w.values().get(i), scope));
                    }
                    execute(w.body(), inner, out);
                }
                case Stmt.Break b -> {
                    requireLoop("break");
                    throw BREAK;
                }
                case Stmt.Continue c -> {
                    requireLoop("continue");
                    throw CONTINUE;
                }
            }
        }
    }

    private void requireLoop(String what) {
        if (loopDepth == 0) {
            throw new JinjaRuntimeException("'" + what + "' outside a for loop");
        }
    }

    private void forLoop(Stmt.For f, Scope scope, StringBuilder out) {
        List<Object> items = Py.iterate(eval(f.iterable(), scope));
        if (f.filter() != null) {
            List<Object> kept = new ArrayList<>();
            for (Object item : items) {
                Scope probe = new Scope(scope);
                bind(f.targets(), item, probe);
                if (Py.truthy(eval(f.filter(), probe))) {
                    kept.add(item);
                }
            }
            items = kept;
        }
        if (items.isEmpty()) {
            execute(f.otherwise(), scope, out);
            return;
        }
        LoopState loop = new LoopState(items, loopDepth);
        int savedDepth = loopDepth;
        loopDepth++;
        try {
            for (int i = 0; i < items.size(); i++) {
                loop.moveTo(i);
                Scope iteration = new Scope(scope);
                bind(f.targets(), items.get(i), iteration);
                iteration.set("loop", loop);
                try {
                    execute(f.body(), iteration, out);
                } catch (LoopControl c) {
                    if (c.isBreak) {
                        break;
                    }
                }
            }
        } finally {
            loopDepth = savedDepth;
        }
    }

    private static void bind(List<String> targets, Object value, Scope scope) {
        if (targets.size() == 1) {
            scope.set(targets.get(0), value);
            return;
        }
        List<Object> parts = Py.iterate(value);
        if (parts.size() != targets.size()) {
            throw new JinjaRuntimeException((parts.size() > targets.size() ? "too many" : "not enough")
                    + " values to unpack (expected " + targets.size() + ", got " + parts.size() + ")");
        }
        for (int i = 0; i < targets.size(); i++) {
            scope.set(targets.get(i), parts.get(i));
        }
    }

    private void assign(Stmt.Set st, Scope scope) {
        Object value = eval(st.value(), scope);
        if (st.attribute() != null) {
            String target = st.targets().get(0);
            Object ns = lookup(target, scope);
            if (!(ns instanceof Namespace n)) {
                throw new JinjaRuntimeException("cannot assign attribute on non-namespace object '" + target + "'");
            }
            n.attributes.put(st.attribute(), value);
            return;
        }
        bind(st.targets(), value, scope);
    }

    private Object applyFilters(List<Expr.Filter> filters, Object value, Scope scope) {
        Object v = value;
        for (Expr.Filter f : filters) {
            List<Object> args = new ArrayList<>();
            Map<String, Object> kwargs = new LinkedHashMap<>();
            evalArgs(f.args(), scope, args, kwargs);
            v = Filters.apply(f.name(), v, args, kwargs);
        }
        return v;
    }

    // ---- expressions ----

    private Object lookup(String name, Scope scope) {
        if (scope.has(name)) {
            return scope.get(name);
        }
        if (globals.containsKey(name)) {
            return globals.get(name);
        }
        return Undefined.named(name);
    }

    private Object eval(Expr e, Scope scope) {
        line = e.line();
        return switch (e) {
            case Expr.Const c -> c.value();
            case Expr.Name n -> lookup(n.name(), scope);
            case Expr.ListLit l -> {
                List<Object> items = new ArrayList<>(l.items().size());
                for (Expr x : l.items()) {
                    items.add(eval(x, scope));
                }
                yield l.tuple() ? new PyTuple(items) : items;
            }
            case Expr.DictLit d -> {
                Map<Object, Object> map = new LinkedHashMap<>();
                for (int i = 0; i < d.keys().size(); i++) {
                    map.put(eval(d.keys().get(i), scope), eval(d.values().get(i), scope));
                }
                yield map;
            }
            case Expr.GetAttr g -> Access.attribute(eval(g.target(), scope), g.name());
            case Expr.GetItem g -> Access.item(eval(g.target(), scope), eval(g.key(), scope));
            case Expr.Slice s -> Access.slice(eval(s.target(), scope), evalOrNull(s.start(), scope),
                    evalOrNull(s.stop(), scope), evalOrNull(s.step(), scope));
            case Expr.Call c -> {
                Object callee = eval(c.callee(), scope);
                List<Object> args = new ArrayList<>();
                Map<String, Object> kwargs = new LinkedHashMap<>();
                evalArgs(c.args(), scope, args, kwargs);
                line = c.line();
                yield invoke(callee, args, kwargs);
            }
            case Expr.Filter f -> {
                Object v = eval(f.value(), scope);
                List<Object> args = new ArrayList<>();
                Map<String, Object> kwargs = new LinkedHashMap<>();
                evalArgs(f.args(), scope, args, kwargs);
                line = f.line();
                yield Filters.apply(f.name(), v, args, kwargs);
            }
            case Expr.Test t -> {
                Object v = eval(t.value(), scope);
                List<Object> args = new ArrayList<>();
                Map<String, Object> kwargs = new LinkedHashMap<>();
                evalArgs(t.args(), scope, args, kwargs);
                line = t.line();
                yield Tests.apply(t.name(), v, args, kwargs) != t.negated();
            }
            case Expr.Unary u -> {
                Object v = eval(u.operand(), scope);
                if (u.op().equals("-")) {
                    yield Py.negate(v);
                }
                if (v instanceof Undefined un) {
                    throw un.fail();
                }
                if (!Py.isNumber(v)) {
                    throw new JinjaRuntimeException("bad operand type for unary +: '" + Py.typeName(v) + "'");
                }
                yield v instanceof Boolean ? Py.toLong(v) : v;
            }
            case Expr.Binary b -> {
                Object left = eval(b.left(), scope);
                Object right = eval(b.right(), scope);
                line = b.line();
                yield Py.binary(b.op(), left, right);
            }
            case Expr.Logical l -> {
                Object left = eval(l.left(), scope);
                if (l.and() != Py.truthy(left)) {
                    yield left;
                }
                yield eval(l.right(), scope);
            }
            case Expr.Not n -> !Py.truthy(eval(n.operand(), scope));
            case Expr.Compare c -> compare(c, scope);
            case Expr.Concat c -> {
                StringBuilder sb = new StringBuilder();
                for (Expr x : c.parts()) {
                    sb.append(Py.str(eval(x, scope)));
                }
                yield sb.toString();
            }
            case Expr.Conditional c -> {
                if (Py.truthy(eval(c.condition(), scope))) {
                    yield eval(c.then(), scope);
                }
                yield c.otherwise() == null
                        ? new Undefined("the inline if-expression on line " + c.line()
                                + " evaluated to false and no else section was defined.")
                        : eval(c.otherwise(), scope);
            }
        };
    }

    private Object evalOrNull(Expr e, Scope scope) {
        return e == null ? null : eval(e, scope);
    }

    private void evalArgs(Expr.Args a, Scope scope, List<Object> args, Map<String, Object> kwargs) {
        for (Expr x : a.positional()) {
            args.add(eval(x, scope));
        }
        for (int i = 0; i < a.names().size(); i++) {
            kwargs.put(a.names().get(i), eval(a.named().get(i), scope));
        }
    }

    private Object compare(Expr.Compare c, Scope scope) {
        Object left = eval(c.operands().get(0), scope);
        for (int i = 0; i < c.ops().size(); i++) {
            Object right = eval(c.operands().get(i + 1), scope);
            line = c.line();
            String op = c.ops().get(i);
            boolean ok = switch (op) {
                case "==" -> Py.equal(left, right);
                case "!=" -> !Py.equal(left, right);
                case "<" -> Py.compare(left, right, op) < 0;
                case "<=" -> Py.compare(left, right, op) <= 0;
                case ">" -> Py.compare(left, right, op) > 0;
                case ">=" -> Py.compare(left, right, op) >= 0;
                case "in" -> Py.contains(right, left);
                case "not in" -> !Py.contains(right, left);
                default -> throw new IllegalStateException(op);
            };
            if (!ok) {
                return false;
            }
            left = right;
        }
        return true;
    }

    private static Object invoke(Object callee, List<Object> args, Map<String, Object> kwargs) {
        if (callee instanceof JinjaCallable f) {
            return f.call(args, kwargs);
        }
        if (callee instanceof Undefined u) {
            throw u.fail();
        }
        throw new JinjaRuntimeException("'" + Py.typeName(callee) + "' object is not callable");
    }

    /** A macro: called, it renders its body in a new scope over the one it was defined in. */
    private final class Macro implements JinjaCallable {
        private final String name;
        private final List<String> params;
        private final List<Expr> defaults;
        private final List<Stmt> body;
        private final Scope closure;

        Macro(String name, List<String> params, List<Expr> defaults, List<Stmt> body, Scope closure) {
            this.name = name;
            this.params = params;
            this.defaults = defaults;
            this.body = body;
            this.closure = closure;
        }

        @Override
        public Object call(List<Object> args, Map<String, Object> kwargs) {
            int callLine = line;
            Scope scope = new Scope(closure);
            Map<String, Object> extraKw = new LinkedHashMap<>(kwargs);
            for (int i = 0; i < params.size(); i++) {
                String p = params.get(i);
                if (i < args.size()) {
                    if (extraKw.containsKey(p)) {
                        throw new JinjaRuntimeException("macro '" + name + "' got multiple values for argument '" + p + "'");
                    }
                    scope.set(p, args.get(i));
                } else if (extraKw.containsKey(p)) {
                    scope.set(p, extraKw.remove(p));
                } else if (defaults.get(i) != null) {
                    scope.set(p, eval(defaults.get(i), scope));
                } else {
                    scope.set(p, new Undefined("parameter '" + p + "' was not provided"));
                }
            }
            scope.set("varargs", args.size() > params.size() ? new ArrayList<>(args.subList(params.size(), args.size()))
                    : new ArrayList<>());
            Object caller = extraKw.remove("caller");
            if (caller != null) {
                scope.set("caller", caller);
            }
            scope.set("kwargs", extraKw);
            StringBuilder out = new StringBuilder();
            int savedDepth = loopDepth;
            loopDepth = 0;
            try {
                execute(body, scope, out);
            } finally {
                loopDepth = savedDepth;
            }
            line = callLine;
            return out.toString();
        }

        @Override
        public String toString() {
            return "<Macro '" + name + "'>";
        }
    }
}
