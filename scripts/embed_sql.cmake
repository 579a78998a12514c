# Writes OUTPUT: a C++ file that returns every sql/<backend>/NNN_name.sql as a Migration.
file(GLOB_RECURSE files RELATIVE "${SQL_DIR}" "${SQL_DIR}/*.sql")
list(SORT files)
set(body "")
foreach(rel IN LISTS files)
  get_filename_component(backend "${rel}" DIRECTORY)
  get_filename_component(stem "${rel}" NAME_WE)
  string(REGEX MATCH "^[0-9]+" version "${stem}")
  string(REGEX REPLACE "^[0-9]+_" "" name "${stem}")
  math(EXPR version "${version}")
  file(READ "${SQL_DIR}/${rel}" content)
  string(APPEND body "  if (backend == \"${backend}\") out.push_back({${version}, \"${name}\", R\"QCSQL(${content})QCSQL\"});\n")
endforeach()
file(WRITE "${OUTPUT}.tmp" "// Generated from sql/ by scripts/embed_sql.cmake; do not edit.
#include \"db/migrations.hpp\"

namespace queuectl {

std::vector<Migration> embedded_migrations(const std::string& backend) {
  std::vector<Migration> out;
${body}  return out;
}

}  // namespace queuectl
")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUTPUT}.tmp" "${OUTPUT}")
