"""contactmp.models: the instantaneous multi-rigid-body contact model of Trinkle, Pang, Sudarsky and
Lo (1995), its islands, and the random problems of their section 6."""
from contactmp.models.contact_model import Contact, ContactModel
from contactmp.models.islands import contact_graph, contact_islands, split_islands
from contactmp.models.random_problems import (
    TRINKLE_MUS, TRINKLE_PROBLEMS, STYLES, DataSet, SceneStyle, problem_seed, random_problem, trinkle_dataset,
)
from contactmp.models.scenes import block_between_jaws, box_on_plane, two_stacks
from contactmp.models.symbolic import ContactSystem
from contactmp.models.systems import (
    box_2d, box_3d, cart_pole_walls, hopper_2d, point_mass_2d, quaternion_to_rotation,
)
from contactmp.models.compliance import elastic_foundation, hertz_gains, hertz_point_contact, range_of_motion_limit
from contactmp.models.gaits import Gait, gait
from contactmp.models.legged import spider, spider_standing
from contactmp.models.manipulation import face_contact_2d, finger_in_box_frame, planar_pusher
from contactmp.models.painleve import RodState, lotstedt_rod, painleve_rod
from contactmp.models.urdf import example_robot_names, example_robot_urdf, solo12, solo12_standing, urdf_system
from contactmp.models.example_robots import example_robot, example_robots
from contactmp.models.rigid_bodies import (
    GRAVITY, GROUND, BodyRef, Manipulator, RigidBody, box_inertia, link, obj, rotation_about,
)

__all__ = [
    "ContactSystem", "box_2d", "box_3d", "cart_pole_walls", "hopper_2d", "point_mass_2d",
    "quaternion_to_rotation",
    "STYLES", "SceneStyle", "block_between_jaws", "BodyRef", "Contact", "ContactModel", "DataSet", "GRAVITY", "GROUND", "Manipulator", "RigidBody",
    "TRINKLE_MUS", "TRINKLE_PROBLEMS", "box_inertia", "contact_graph", "link", "obj", "problem_seed",
    "random_problem", "rotation_about", "contact_islands", "split_islands", "trinkle_dataset",
    "box_on_plane", "two_stacks", "RodState", "lotstedt_rod", "painleve_rod",
    "example_robot", "example_robots", "example_robot_names", "example_robot_urdf", "solo12", "solo12_standing", "urdf_system",
    "elastic_foundation", "hertz_gains", "hertz_point_contact", "range_of_motion_limit",
    "Gait", "gait", "spider", "spider_standing", "face_contact_2d", "finger_in_box_frame",
    "planar_pusher",
]
