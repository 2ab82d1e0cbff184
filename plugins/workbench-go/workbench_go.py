"""Go language plugin for workbench (grammar: tree-sitter-go)."""

from workbench.languages.spec import LanguagePlugin, SubCodeKind, hookimpl


class GoLanguage(LanguagePlugin):
    name = "go"
    aliases = ("golang",)
    extensions = (".go",)
    grammar_distribution = "tree-sitter-go"
    identifier_node_types = frozenset(
        {"identifier", "field_identifier", "type_identifier", "package_identifier", "label_name",
         # predeclared identifiers that the grammar gives node types of their own
         "nil", "true", "false", "iota"}
    )
    literal_node_types = frozenset(
        {"int_literal", "float_literal", "imaginary_literal", "rune_literal",
         "interpreted_string_literal", "raw_string_literal"}
    )
    skip_node_types = frozenset({"comment"})
    subcode_node_types = {
        SubCodeKind.FOR: frozenset({"for_statement"}),
        SubCodeKind.WHILE: frozenset(),  # Go has no while loop: `for cond {}` is a for_statement
        SubCodeKind.ASSIGN: frozenset(
            {"assignment_statement", "short_var_declaration", "var_declaration", "const_declaration"}
        ),
        SubCodeKind.IF: frozenset({"if_statement"}),
        SubCodeKind.CLASS_DEF: frozenset({"type_spec"}),  # `type Point struct {...}`
        SubCodeKind.FUNCTION_DEF: frozenset({"function_declaration", "method_declaration"}),
        # `select` picks one of several channel cases, as a switch picks one of several values
        SubCodeKind.SWITCH: frozenset({"expression_switch_statement", "type_switch_statement", "select_statement"}),
        SubCodeKind.CALL: frozenset({"call_expression"}),
    }
    definition_fields = {
        "short_var_declaration": ("left",),
        "assignment_statement": ("left",),
        "var_spec": ("name",),
        "const_spec": ("name",),
        # a receiver, parameters and named results `(q int, err error)` are declared alike
        "function_declaration": ("name", "parameters", "result"),
        "method_declaration": ("receiver", "name", "parameters", "result"),
        "func_literal": ("parameters", "result"),  # `func(y int) int { ... }` declares y
        "type_spec": ("name",),
        "range_clause": ("left",),  # `for i, x := range xs` defines i and x
        "type_switch_statement": ("alias",),  # `switch t := x.(type)` defines t
        "receive_statement": ("left",),  # `case v, ok := <-ch:` in a select defines v and ok
    }
    # `xs[i] = x`, `m[k] += 1` and `*p = x` read xs, m and p: the index and pointer operand is `operand`
    read_in_target_fields = LanguagePlugin.read_in_target_fields | {"operand"}
    name_query = """
    (inc_statement (_) @update)             ; x++ reads x and assigns it
    (dec_statement (_) @update)
    (assignment_statement
      left: (expression_list (_) @update)
      operator: ["+=" "-=" "*=" "/=" "%=" "&=" "|=" "^=" "<<=" ">>=" "&^="])
    (label_name) @not_a_name                ; `break outer` names a label, no variable
    ((identifier) @not_a_name (#eq? @not_a_name "_"))  ; the blank identifier binds nothing
    (_ result: [(type_identifier) (qualified_type) (generic_type) (pointer_type) (slice_type) (array_type)
                (map_type) (channel_type) (function_type) (interface_type) (struct_type) (negated_type)]
       @not_a_name)                          ; `func f() int`: a result type, no name
    ; `Point{X: n}`: a struct literal's key is a field, no variable (a map literal's `{k: n}` and an array's
    ; `{i: n}` read theirs); tree-sitter-go parses every key as an expression, so the literal's type decides:
    ; a named or struct type, or an elided element (`[]Point{{X: n}}`) of a slice, array or map of one
    (composite_literal
      type: [(type_identifier) (qualified_type) (generic_type) (struct_type)]
      body: (literal_value (keyed_element key: (literal_element (identifier) @not_a_name))))
    (composite_literal
      type: [(slice_type element: [(type_identifier) (qualified_type) (generic_type) (pointer_type)])
             (array_type element: [(type_identifier) (qualified_type) (generic_type) (pointer_type)])
             (implicit_length_array_type element: [(type_identifier) (qualified_type) (generic_type) (pointer_type)])]
      body: (literal_value [
        (literal_element (literal_value (keyed_element key: (literal_element (identifier) @not_a_name))))
        (keyed_element value: (literal_element (literal_value
          (keyed_element key: (literal_element (identifier) @not_a_name)))))]))
    (composite_literal
      type: (map_type value: [(type_identifier) (qualified_type) (generic_type) (pointer_type)])
      body: (literal_value (keyed_element value: (literal_element (literal_value
        (keyed_element key: (literal_element (identifier) @not_a_name)))))))
    (composite_literal
      type: (map_type key: [(type_identifier) (qualified_type) (generic_type) (pointer_type)])
      body: (literal_value (keyed_element key: (literal_element (literal_value
        (keyed_element key: (literal_element (identifier) @not_a_name)))))))
    """

    def language_capsule(self):
        import tree_sitter_go  # imported lazily: listing plugins must not load every grammar

        return tree_sitter_go.language()


@hookimpl
def workbench_languages():
    return [GoLanguage()]
