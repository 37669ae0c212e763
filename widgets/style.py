"""The widgets' colours in one module: a colour means the same in every widget, and each grey is named for
what it draws (their shades differ on purpose: text must read, an edge or a fill recedes)."""

# The report's Figs. 1 and 2: blue for the forward parts, red for adjoints.
BLUE, BLUE_FILL = "#1f5fa8", "#dbe9f6"
RED, RED_FILL = "#c0262d", "#fde0dd"
CURRENT = "#ff8c00"  # the node or definition of this step
ORANGE = "#e07b00"  # the inverse widgets' second method beside the blue one
GREEN = "#1a7f37"  # the chain widgets' optimum
INPUT_GREEN, INPUT_FILL = "#2e7d32", "#e3f1df"  # a program's inputs
OUTPUT_FILL = "#b9d4ef"  # a program's output
KERNEL = "#2ca02c"  # the solution line and the columns of K, in the lattice and the polytope

# The pictures of the widgets: text, its secondary grey, placeholders and disabled controls, rules.
INK, GREY_TEXT, LIGHT, RULE = "#1a1a1a", "#616161", "#9e9e9e", "#d0d0d0"
GREY_SCHEDULE, GREY_SCHEDULE_FILL = "#57606a", "#eef0f2"  # the chain widgets' products, the tree's edges, labels
GREY_INFEASIBLE = "#8c959f"  # a chain table's candidate that is not feasible
GREY_EDGE = "#9a9a9a"  # the outline of a lump not cut
GREY_UNREACHED, GREY_UNREACHED_FILL = "0.55", "0.93"  # a tensor the adjoint sweep never reaches
