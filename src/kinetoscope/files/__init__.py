"""How results reach disk without harming the user's files: outputs written to a
temporary file and renamed, never over an input or an earlier artifact
(`outputs`), and the record of files kinetoscope wrote itself (`own_files`).
"""
