"""What a column is, below files, scans and datasets:

- :mod:`rcfmt.schema.types`: logical types and physical kinds;
- :mod:`rcfmt.schema.annotated`: Arrow types stored as another (extension types);
- :mod:`rcfmt.schema.arrow_io`: a column's values between rcfmt's holders and Arrow;
- :mod:`rcfmt.schema.nested`: nested fields shredded into flat columns and back;
- :mod:`rcfmt.schema.nested_storage`: arrays of nested types in their stored form
  (dictionaries decoded, views as lists) before shredding;
- :mod:`rcfmt.schema.nested_json`: the footer's node tree and nested fields as JSON;
- :mod:`rcfmt.schema.tables`: the stored schema of an Arrow schema and its physical columns;
- :mod:`rcfmt.schema.statistics`: column statistics (footer, page index, pruning).

Code in rcfmt imports from here.
"""
