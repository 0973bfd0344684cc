"""The datasets family, one owner in rooms, each the only module that names its tables:
:mod:`.rows` (``datasets``), :mod:`.versions` (``dataset_versions``, every version of
every dataset), :mod:`.transactions` (``transactions``, each lake transaction's part on
one dataset), :mod:`.files` (``dataset_files``, the lake's interval index of
containers), :mod:`.columns` (``column_lineage``, the input fields each output field of a
version came from) and :mod:`.symlinks` (``dataset_symlinks``, datasets' other names)."""
