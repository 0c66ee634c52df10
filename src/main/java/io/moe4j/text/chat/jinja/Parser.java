package io.moe4j.text.chat.jinja;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * Recursive-descent parser from tokens to statements, with Jinja's operator precedence (lowest first):
 * conditional {@code x if c else y}, {@code or}, {@code and}, {@code not}, comparisons and {@code in},
 * {@code + -}, {@code ~}, {@code * / // %}, {@code **}, unary {@code - +}, then postfix access, calls, filters
 * and tests (so {@code a|length - 1} is {@code (a|length) - 1}).
 */
final class Parser {
    private static final Set<String> COMPARE_OPS = Set.of("==", "!=", "<", "<=", ">", ">=");

    private final String name;
    private final List<Token> tokens;
    /** Block tags being parsed, innermost last, for the error when one is never closed. */
    private final java.util.ArrayDeque<Token> open = new java.util.ArrayDeque<>();
    private int at;

    Parser(List<Token> tokens, String name) {
        this.tokens = tokens;
        this.name = name;
    }

    List<Stmt> parseTemplate() {
        List<Stmt> body = subparse(Set.of());
        expectKind(Token.Kind.EOF);
        return body;
    }

    // ---- statements ----

    /** Statements until a block tag whose name is in {@code ends} (left unconsumed after its {@code {%}). */
    private List<Stmt> subparse(Set<String> ends) {
        List<Stmt> body = new ArrayList<>();
        while (true) {
            Token t = peek();
            switch (t.kind()) {
                case TEXT -> {
                    next();
                    body.add(new Stmt.Text(t.value(), t.line()));
                }
                case VAR_BEGIN -> {
                    next();
                    Expr e = parseTuple(true);
                    expectKind(Token.Kind.VAR_END);
                    body.add(new Stmt.Print(e, t.line()));
                }
                case BLOCK_BEGIN -> {
                    Token tag = tokens.get(at + 1);
                    if (tag.kind() == Token.Kind.NAME && ends.contains(tag.value())) {
                        next();
                        return body;
                    }
                    if (tag.kind() == Token.Kind.NAME && tag.value().startsWith("end") && !open.isEmpty()) {
                        throw error(tag, "unexpected '" + tag.value() + "': the innermost open block is '"
                                + open.peekLast().value() + "' (line " + open.peekLast().line() + ")");
                    }
                    if (tag.kind() == Token.Kind.NAME && tag.value().startsWith("end")) {
                        throw error(tag, "unexpected '" + tag.value() + "': no block is open");
                    }
                    next();
                    body.add(statement());
                }
                case EOF -> {
                    if (!ends.isEmpty()) {
                        Token opener = open.peekLast();
                        throw error(t, "unexpected end of template: the '" + opener.value() + "' block opened on line "
                                + opener.line() + " is never closed" + (ends.size() == 1 ? " by '" + ends.iterator().next()
                                + "'" : ""));
                    }
                    return body;
                }
                default -> throw error(t, "unexpected " + t.describe());
            }
        }
    }

    private Stmt statement() {
        Token tag = peek();
        if (tag.kind() != Token.Kind.NAME) {
            throw error(tag, "expected a tag name, found " + tag.describe());
        }
        next();
        open.addLast(tag);
        Stmt stmt = blockStatement(tag);
        open.removeLast();
        return stmt;
    }

    private Stmt blockStatement(Token tag) {
        return switch (tag.value()) {
            case "if" -> ifStatement(tag);
            case "for" -> forStatement(tag);
            case "set" -> setStatement(tag);
            case "macro" -> macroStatement(tag);
            case "call" -> callStatement(tag);
            case "filter" -> filterStatement(tag);
            case "with" -> withStatement(tag);
            case "break" -> {
                blockEnd();
                yield new Stmt.Break(tag.line());
            }
            case "continue" -> {
                blockEnd();
                yield new Stmt.Continue(tag.line());
            }
            case "generation" -> {
                // transformers' assistant-mask extension: renders its body unchanged.
                blockEnd();
                List<Stmt> body = subparse(Set.of("endgeneration"));
                endTag("endgeneration");
                yield new Stmt.If(List.of(new Expr.Const(true, tag.line())), List.of(body), List.of(), tag.line());
            }
            case "include", "import", "from", "extends", "block" ->
                throw error(tag, "tag '" + tag.value() + "' is not supported in chat templates");
            default -> throw error(tag, "unknown tag '" + tag.value() + "'");
        };
    }

    private Stmt ifStatement(Token tag) {
        List<Expr> conditions = new ArrayList<>();
        List<List<Stmt>> bodies = new ArrayList<>();
        conditions.add(parseTuple(true));
        blockEnd();
        while (true) {
            bodies.add(subparse(Set.of("elif", "else", "endif")));
            Token end = next();
            switch (end.value()) {
                case "elif" -> {
                    conditions.add(parseTuple(true));
                    blockEnd();
                }
                case "else" -> {
                    blockEnd();
                    List<Stmt> otherwise = subparse(Set.of("endif"));
                    endTag("endif");
                    return new Stmt.If(conditions, bodies, otherwise, tag.line());
                }
                default -> {
                    blockEnd();
                    return new Stmt.If(conditions, bodies, List.of(), tag.line());
                }
            }
        }
    }

    private Stmt forStatement(Token tag) {
        List<String> targets = targetNames();
        expectName("in");
        Expr iterable = parseTuple(false);
        Expr filter = null;
        if (peek().isName("if")) {
            next();
            filter = parseTuple(true);
        }
        if (peek().isName("recursive")) {
            throw error(peek(), "recursive for loops are not supported");
        }
        blockEnd();
        List<Stmt> body = subparse(Set.of("endfor", "else"));
        List<Stmt> otherwise = List.of();
        if (next().value().equals("else")) {
            blockEnd();
            otherwise = subparse(Set.of("endfor"));
            endTag("endfor");
        } else {
            blockEnd();
        }
        return new Stmt.For(targets, iterable, filter, body, otherwise, tag.line());
    }

    private List<String> targetNames() {
        List<String> names = new ArrayList<>();
        boolean paren = peek().isOp("(");
        if (paren) {
            next();
        }
        names.add(expectKind(Token.Kind.NAME).value());
        while (peek().isOp(",")) {
            next();
            if (peek().kind() != Token.Kind.NAME) {
                break;
            }
            names.add(expectKind(Token.Kind.NAME).value());
        }
        if (paren) {
            expectOp(")");
        }
        return names;
    }

    private Stmt setStatement(Token tag) {
        Token first = expectKind(Token.Kind.NAME);
        if (peek().isOp(".")) {
            next();
            String attribute = expectKind(Token.Kind.NAME).value();
            expectOp("=");
            Expr value = parseTuple(true);
            blockEnd();
            return new Stmt.Set(List.of(first.value()), attribute, value, tag.line());
        }
        List<String> targets = new ArrayList<>(List.of(first.value()));
        while (peek().isOp(",")) {
            next();
            targets.add(expectKind(Token.Kind.NAME).value());
        }
        if (peek().isOp("=")) {
            next();
            Expr value = parseTuple(true);
            blockEnd();
            return new Stmt.Set(targets, null, value, tag.line());
        }
        if (targets.size() != 1) {
            throw error(peek(), "a block set takes one name");
        }
        List<Expr.Filter> filters = filterChain();
        blockEnd();
        List<Stmt> body = subparse(Set.of("endset"));
        endTag("endset");
        return new Stmt.SetBlock(first.value(), filters, body, tag.line());
    }

    private List<Expr.Filter> filterChain() {
        List<Expr.Filter> filters = new ArrayList<>();
        boolean first = true;
        while (first ? peek().kind() == Token.Kind.NAME || peek().isOp("|") : peek().isOp("|")) {
            if (peek().isOp("|")) {
                next();
            }
            first = false;
            filters.add((Expr.Filter) filter(null));
        }
        return filters;
    }

    private Stmt macroStatement(Token tag) {
        String macroName = expectKind(Token.Kind.NAME).value();
        List<String> params = new ArrayList<>();
        List<Expr> defaults = new ArrayList<>();
        signature(params, defaults);
        blockEnd();
        List<Stmt> body = subparse(Set.of("endmacro"));
        endTag("endmacro");
        return new Stmt.Macro(macroName, params, defaults, body, tag.line());
    }

    /** {@code (a, b=1)}: defaults has one entry per parameter, null where none is given. */
    private void signature(List<String> params, List<Expr> defaults) {
        expectOp("(");
        while (!peek().isOp(")")) {
            if (!params.isEmpty()) {
                expectOp(",");
                if (peek().isOp(")")) {
                    break;
                }
            }
            params.add(expectKind(Token.Kind.NAME).value());
            if (peek().isOp("=")) {
                next();
                defaults.add(parseExpression(true));
            } else {
                defaults.add(null);
            }
        }
        next();
    }

    private Stmt callStatement(Token tag) {
        List<String> params = new ArrayList<>();
        List<Expr> defaults = new ArrayList<>();
        if (peek().isOp("(")) {
            signature(params, defaults);
        }
        Expr call = parseExpression(true);
        if (!(call instanceof Expr.Call c)) {
            throw error(tag, "a call block needs a macro call");
        }
        blockEnd();
        List<Stmt> body = subparse(Set.of("endcall"));
        endTag("endcall");
        return new Stmt.CallBlock(c, params, defaults, body, tag.line());
    }

    private Stmt filterStatement(Token tag) {
        List<Expr.Filter> filters = filterChain();
        blockEnd();
        List<Stmt> body = subparse(Set.of("endfilter"));
        endTag("endfilter");
        return new Stmt.FilterBlock(filters, body, tag.line());
    }

    private Stmt withStatement(Token tag) {
        List<String> names = new ArrayList<>();
        List<Expr> values = new ArrayList<>();
        while (!peek().is(Token.Kind.BLOCK_END, "%}")) {
            if (!names.isEmpty()) {
                expectOp(",");
            }
            names.add(expectKind(Token.Kind.NAME).value());
            expectOp("=");
            values.add(parseExpression(true));
        }
        blockEnd();
        List<Stmt> body = subparse(Set.of("endwith"));
        endTag("endwith");
        return new Stmt.With(names, values, body, tag.line());
    }

    /** The name of the closing tag subparse stopped at, then its {@code %}}. */
    private void endTag(String tagName) {
        expectName(tagName);
        blockEnd();
    }

    private void blockEnd() {
        Token t = next();
        if (t.kind() != Token.Kind.BLOCK_END) {
            throw error(t, "expected end of statement '%}', found " + t.describe());
        }
    }

    // ---- expressions ----

    /** An expression, or several separated by commas (a tuple). */
    private Expr parseTuple(boolean withConditional) {
        int line = peek().line();
        Expr first = parseExpression(withConditional);
        if (!peek().isOp(",")) {
            return first;
        }
        List<Expr> items = new ArrayList<>(List.of(first));
        while (peek().isOp(",")) {
            next();
            if (endsTuple(peek())) {
                break;
            }
            items.add(parseExpression(withConditional));
        }
        return new Expr.ListLit(items, true, line);
    }

    private static boolean endsTuple(Token t) {
        return t.kind() == Token.Kind.VAR_END || t.kind() == Token.Kind.BLOCK_END || t.isOp(")") || t.isOp("]")
                || t.isOp("}") || t.isName("if") || t.isName("in") || t.isName("recursive");
    }

    private Expr parseExpression(boolean withConditional) {
        return withConditional ? conditional() : or();
    }

    private Expr conditional() {
        Expr expr = or();
        while (peek().isName("if")) {
            Token t = next();
            Expr condition = or();
            Expr otherwise = null;
            if (peek().isName("else")) {
                next();
                otherwise = conditional();
            }
            expr = new Expr.Conditional(condition, expr, otherwise, t.line());
        }
        return expr;
    }

    private Expr or() {
        Expr left = and();
        while (peek().isName("or")) {
            Token t = next();
            left = new Expr.Logical(false, left, and(), t.line());
        }
        return left;
    }

    private Expr and() {
        Expr left = not();
        while (peek().isName("and")) {
            Token t = next();
            left = new Expr.Logical(true, left, not(), t.line());
        }
        return left;
    }

    private Expr not() {
        if (peek().isName("not")) {
            Token t = next();
            return new Expr.Not(not(), t.line());
        }
        return compare();
    }

    private Expr compare() {
        int line = peek().line();
        Expr first = math1();
        List<Expr> operands = new ArrayList<>(List.of(first));
        List<String> ops = new ArrayList<>();
        while (true) {
            Token t = peek();
            if (t.kind() == Token.Kind.OPERATOR && COMPARE_OPS.contains(t.value())) {
                next();
                ops.add(t.value());
            } else if (t.isName("in")) {
                next();
                ops.add("in");
            } else if (t.isName("not") && tokens.get(at + 1).isName("in")) {
                next();
                next();
                ops.add("not in");
            } else {
                break;
            }
            operands.add(math1());
        }
        return ops.isEmpty() ? first : new Expr.Compare(operands, ops, line);
    }

    private Expr math1() {
        Expr left = concat();
        while (peek().isOp("+") || peek().isOp("-")) {
            Token t = next();
            left = new Expr.Binary(t.value(), left, concat(), t.line());
        }
        return left;
    }

    private Expr concat() {
        int line = peek().line();
        List<Expr> parts = new ArrayList<>(List.of(math2()));
        while (peek().isOp("~")) {
            next();
            parts.add(math2());
        }
        return parts.size() == 1 ? parts.get(0) : new Expr.Concat(parts, line);
    }

    private Expr math2() {
        Expr left = pow();
        while (peek().isOp("*") || peek().isOp("/") || peek().isOp("//") || peek().isOp("%")) {
            Token t = next();
            left = new Expr.Binary(t.value(), left, pow(), t.line());
        }
        return left;
    }

    private Expr pow() {
        Expr left = unary(true);
        while (peek().isOp("**")) {
            Token t = next();
            left = new Expr.Binary("**", left, unary(true), t.line());
        }
        return left;
    }

    private Expr unary(boolean withFilter) {
        Token t = peek();
        Expr node;
        if (t.isOp("-") || t.isOp("+")) {
            next();
            node = new Expr.Unary(t.value(), unary(false), t.line());
        } else {
            node = primary();
        }
        node = postfix(node);
        return withFilter ? filterExpr(node) : node;
    }

    private Expr primary() {
        Token t = next();
        switch (t.kind()) {
            case NAME -> {
                return switch (t.value()) {
                    case "true", "True" -> new Expr.Const(true, t.line());
                    case "false", "False" -> new Expr.Const(false, t.line());
                    case "none", "None" -> new Expr.Const(null, t.line());
                    default -> new Expr.Name(t.value(), t.line());
                };
            }
            case STRING -> {
                StringBuilder sb = new StringBuilder(t.value());
                while (peek().kind() == Token.Kind.STRING) {
                    sb.append(next().value());
                }
                return new Expr.Const(sb.toString(), t.line());
            }
            case INTEGER -> {
                return new Expr.Const(parseInteger(t), t.line());
            }
            case FLOAT -> {
                return new Expr.Const(Double.parseDouble(t.value()), t.line());
            }
            case OPERATOR -> {
                switch (t.value()) {
                    case "(" -> {
                        if (peek().isOp(")")) {
                            next();
                            return new Expr.ListLit(List.of(), true, t.line());
                        }
                        Expr inner = parseTuple(true);
                        expectOp(")");
                        return inner;
                    }
                    case "[" -> {
                        List<Expr> items = new ArrayList<>();
                        while (!peek().isOp("]")) {
                            if (!items.isEmpty()) {
                                expectOp(",");
                                if (peek().isOp("]")) {
                                    break;
                                }
                            }
                            items.add(parseExpression(true));
                        }
                        next();
                        return new Expr.ListLit(items, false, t.line());
                    }
                    case "{" -> {
                        List<Expr> keys = new ArrayList<>();
                        List<Expr> values = new ArrayList<>();
                        while (!peek().isOp("}")) {
                            if (!keys.isEmpty()) {
                                expectOp(",");
                                if (peek().isOp("}")) {
                                    break;
                                }
                            }
                            keys.add(parseExpression(true));
                            expectOp(":");
                            values.add(parseExpression(true));
                        }
                        next();
                        return new Expr.DictLit(keys, values, t.line());
                    }
                    default -> throw error(t, "unexpected " + t.describe());
                }
            }
            default -> throw error(t, "unexpected " + t.describe());
        }
    }

    private Object parseInteger(Token t) {
        try {
            return Long.parseLong(t.value());
        } catch (NumberFormatException e) {
            throw error(t, "integer literal " + t.value() + " is out of range");
        }
    }

    private Expr postfix(Expr node) {
        while (true) {
            Token t = peek();
            if (t.isOp(".")) {
                next();
                Token attr = next();
                if (attr.kind() == Token.Kind.NAME) {
                    node = new Expr.GetAttr(node, attr.value(), t.line());
                } else if (attr.kind() == Token.Kind.INTEGER) {
                    node = new Expr.GetItem(node, new Expr.Const(parseInteger(attr), attr.line()), t.line());
                } else {
                    throw error(attr, "expected an attribute name after '.', found " + attr.describe());
                }
            } else if (t.isOp("[")) {
                next();
                node = subscript(node, t);
            } else if (t.isOp("(")) {
                next();
                node = new Expr.Call(node, callArgs(), t.line());
            } else {
                return node;
            }
        }
    }

    private Expr subscript(Expr node, Token open) {
        Expr[] parts = new Expr[3];
        int part = 0;
        boolean slice = false;
        while (!peek().isOp("]")) {
            if (peek().isOp(":")) {
                next();
                slice = true;
                if (++part > 2) {
                    throw error(open, "a slice takes at most three parts");
                }
            } else {
                if (parts[part] != null) {
                    throw error(peek(), "expected ':' or ']' in subscript, found " + peek().describe());
                }
                parts[part] = parseTuple(true);
            }
        }
        next();
        if (!slice) {
            if (parts[0] == null) {
                throw error(open, "empty subscript");
            }
            return new Expr.GetItem(node, parts[0], open.line());
        }
        return new Expr.Slice(node, parts[0], parts[1], parts[2], open.line());
    }

    /** Arguments after an opening parenthesis, up to and including the closing one. */
    private Expr.Args callArgs() {
        List<Expr> positional = new ArrayList<>();
        List<String> names = new ArrayList<>();
        List<Expr> named = new ArrayList<>();
        boolean first = true;
        while (!peek().isOp(")")) {
            if (!first) {
                expectOp(",");
                if (peek().isOp(")")) {
                    break;
                }
            }
            first = false;
            if (peek().isOp("*") || peek().isOp("**")) {
                throw error(peek(), "*args and **kwargs in calls are not supported");
            }
            if (peek().kind() == Token.Kind.NAME && tokens.get(at + 1).isOp("=")) {
                names.add(next().value());
                next();
                named.add(parseExpression(true));
            } else {
                if (!names.isEmpty()) {
                    throw error(peek(), "a positional argument follows a keyword argument");
                }
                positional.add(parseExpression(true));
            }
        }
        next();
        return new Expr.Args(positional, names, named);
    }

    private Expr filterExpr(Expr node) {
        while (true) {
            Token t = peek();
            if (t.isOp("|")) {
                next();
                node = filter(node);
            } else if (t.isName("is")) {
                next();
                node = test(node, t);
            } else if (t.isOp("(")) {
                next();
                node = new Expr.Call(node, callArgs(), t.line());
            } else {
                return node;
            }
        }
    }

    private Expr filter(Expr value) {
        Token n = expectKind(Token.Kind.NAME);
        String filterName = n.value();
        while (peek().isOp(".")) {
            next();
            filterName += "." + expectKind(Token.Kind.NAME).value();
        }
        if (!Filters.exists(filterName)) {
            throw error(n, "no filter named '" + filterName + "'");
        }
        Expr.Args args = Expr.Args.NONE;
        if (peek().isOp("(")) {
            next();
            args = callArgs();
        }
        return new Expr.Filter(value, filterName, args, n.line());
    }

    private Expr test(Expr value, Token is) {
        boolean negated = false;
        if (peek().isName("not")) {
            next();
            negated = true;
        }
        Token n = expectKind(Token.Kind.NAME);
        String testName = n.value();
        if (!Tests.exists(testName)) {
            throw error(n, "no test named '" + testName + "'");
        }
        Expr.Args args = Expr.Args.NONE;
        Token t = peek();
        if (t.isOp("(")) {
            next();
            args = callArgs();
        } else if ((t.kind() == Token.Kind.NAME || t.kind() == Token.Kind.STRING || t.kind() == Token.Kind.INTEGER
                || t.kind() == Token.Kind.FLOAT || t.isOp("[") || t.isOp("{"))
                && !t.isName("else") && !t.isName("or") && !t.isName("and") && !t.isName("if")) {
            if (t.isName("is")) {
                throw error(t, "tests cannot be chained with 'is'");
            }
            args = new Expr.Args(List.of(postfix(primary())), List.of(), List.of());
        }
        return new Expr.Test(value, testName, args, negated, is.line());
    }

    // ---- token helpers ----

    private Token peek() {
        return tokens.get(at);
    }

    private Token next() {
        Token t = tokens.get(at);
        if (t.kind() != Token.Kind.EOF) {
            at++;
        }
        return t;
    }

    private Token expectKind(Token.Kind kind) {
        Token t = next();
        if (t.kind() != kind) {
            throw error(t, "expected " + kind.name().toLowerCase().replace('_', ' ') + ", found " + t.describe());
        }
        return t;
    }

    private void expectOp(String op) {
        Token t = next();
        if (!t.isOp(op)) {
            throw error(t, "expected '" + op + "', found " + t.describe());
        }
    }

    private void expectName(String word) {
        Token t = next();
        if (!t.isName(word)) {
            throw error(t, "expected '" + word + "', found " + t.describe());
        }
    }

    private JinjaSyntaxException error(Token t, String what) {
        return new JinjaSyntaxException(name, t.line(), what);
    }
}
