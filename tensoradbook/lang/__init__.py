"""Report secs. 5-6, the notation of element-wise tensor functions: the one table of operations
(:mod:`.ops`), expression trees and their traversal (:mod:`.expr`), the notation's parser
(:mod:`.parser`) and printers (:mod:`.printer`), and simplification (:mod:`.simplify`). Builds on
:mod:`tensoradbook.integer` only."""
